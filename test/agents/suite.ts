// The agents level's tests, the same for every agent (each agent's *.test.ts calls
// agentSuite): its binary runs here; one turn on the gateway's embedded defaults; a file
// written through a scripted upstream that plays the model, billed exactly. Each run: the
// real binary, a real gateway process, a recording tap between them, strace on the agent.
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import {
  createFundedAccount,
  runVerify,
  startGateway,
  startGatewayWithChat,
  tempDir,
  type Gateway,
} from '../gateway/helpers.js';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import type { Agent, AgentSetup } from './agent.js';
import { locate, runAgent, type Located, type RunResult } from './run.js';
import { micros, reportedBill, Tap, type Exchange } from './tap.js';
import { DONE, fileTaskModel, type TaskLog } from './task-model.js';
import { RECORDING, toFixture, writeFixtures } from './fixtures.js';

/** The tier agents work on: its output limit (16,384) is below their default max_tokens. */
export const MODEL = 'service-ai-pro-4';
export const SMALL_MODEL = 'service-ai-lite';
/** One agent run, at most (a run takes seconds; a hung one is killed with its children). */
const RUN_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = RUN_TIMEOUT_MS + 60_000;

export function agentSuite(agent: Agent): void {
  let located: Located | Error;
  try {
    located = locate(agent);
  } catch (error) {
    located = error as Error;
  }
  const title = located instanceof Error ? agent.name : `${agent.name} ${located.version}`;
  const binary = (): Located => {
    if (located instanceof Error) throw located;
    return located;
  };

  test(`${title}: installed at the pinned version and runs on this machine`, () => {
    const { version } = binary();
    assert.ok(version);
  });

  test(
    `${title}: one turn on the embedded defaults (built-in engine) completes, no 4xx, billed exactly`,
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const bin = binary();
      const gateway = await startGateway();
      const session = await Session.open(t, agent, gateway);
      try {
        const run = await session.run(bin, {
          scenario: 'builtin',
          prompt: 'Say hello in one short sentence.',
          writes: false,
        });
        session.assertClean(run);
        session.assertAnsweredInText(run);
        await session.assertBilledExactly(run);
      } finally {
        await session.close();
      }
    },
  );

  test(
    `${title}: writes a file with its own tool through a scripted upstream, billed exactly`,
    { timeout: TEST_TIMEOUT_MS },
    async (t) => {
      const bin = binary();
      const log: TaskLog = { call: null, result: null, problem: null };
      const cwd = tempDir(`aihub-${agent.name}-work-`);
      const name = 'greeting.txt';
      const content = `Hello from ${agent.name} through AIHub: it's written.\nSecond line.\n`;
      const upstream = await ScriptedUpstream.start({
        kind: 'respond',
        answer: fileTaskModel({ path: join(cwd, name), content, marker: name }, log),
      });
      const gateway = await startGatewayWithChat({
        engines: {
          model: {
            type: 'openai-compatible',
            base_url: upstream.base_url,
            api_key_env: 'SCRIPTED_KEY',
            model: 'scripted-coding-model',
          },
        },
        models: { [MODEL]: { targets: ['model'] }, [SMALL_MODEL]: { targets: ['model'] } },
      });
      const session = await Session.open(t, agent, gateway, cwd);
      try {
        const run = await session.run(bin, {
          scenario: 'write-file',
          prompt: `Create a file named ${name} in the current directory. Its whole content must be exactly this text:\n${content}`,
          writes: true,
        });
        const why = session.explain(run);
        assert.equal(
          log.problem,
          null,
          `${agent.name}: the scripted model found no tool to write a file: ${log.problem}\n${why}`,
        );
        assert.ok(
          log.call,
          `${agent.name}: the scripted model was never asked to do the task\n${why}`,
        );
        assert.ok(
          log.result !== null,
          `${agent.name}: the tool's result (${log.call.name}) never came back to the model\n${why}`,
        );
        session.assertClean(run);
        assert.ok(
          run.outcome.text.includes(DONE(name)),
          `${agent.name}: the model's last answer did not reach the agent's result: ${run.outcome.text.slice(0, 300)}`,
        );
        const path = join(cwd, name);
        assert.ok(
          existsSync(path),
          `${agent.name}: ${name} was not written (tool ${log.call.name}, result ${log.result})\n${why}`,
        );
        assert.equal(
          readFileSync(path, 'utf8'),
          content,
          `${agent.name}: ${name} holds other content`,
        );
        await session.assertBilledExactly(run);
        t.diagnostic(`${agent.name}: wrote ${name} with its tool ${log.call.name}`);
      } finally {
        await session.close();
        await upstream.close();
      }
    },
  );
}

/** One agent run against one gateway: an account, a tap, a temp HOME and working dir. */
class Session {
  private balance_before = 0;
  /** The gateway restarted on the same store after the run (see settle). */
  private settled: Gateway | null = null;

  private constructor(
    private readonly t: TestContext,
    readonly agent: Agent,
    private gateway: Gateway,
    readonly tap: Tap,
    readonly setup: AgentSetup,
    readonly cwd: string,
  ) {}

  static async open(t: TestContext, agent: Agent, gateway: Gateway, cwd?: string) {
    const { key } = await createFundedAccount(gateway, 2000);
    const tap = await Tap.start(gateway.url);
    const setup: AgentSetup = {
      origin: tap.origin,
      key,
      model: MODEL,
      small_model: SMALL_MODEL,
      home: tempDir(`aihub-${agent.name}-home-`),
    };
    const work = cwd ?? tempDir(`aihub-${agent.name}-work-`);
    const session = new Session(t, agent, gateway, tap, setup, work);
    session.balance_before = (await session.wallet(gateway)).balance;
    return session;
  }

  async run(
    bin: Located,
    turn: { scenario: string; prompt: string; writes: boolean },
  ): Promise<RunResult> {
    const run = await runAgent(this.agent, bin, {
      setup: this.setup,
      cwd: this.cwd,
      timeout_ms: RUN_TIMEOUT_MS,
      prompt: turn.prompt,
      writes: turn.writes,
    });
    if (RECORDING) this.record(bin, turn.scenario);
    this.t.diagnostic(
      `${this.agent.name}: ran ${run.duration_ms} ms, exit ${run.code ?? run.signal}, ${this.tap.exchanges.length} requests: ${this.tap.exchanges.map((e) => `${e.method} ${e.path} ${e.status}`).join(', ')}`,
    );
    if (run.untraced)
      this.t.diagnostic(`NETWORK NOT CHECKED for ${this.agent.name}: ${run.untraced}`);
    return run;
  }

  /** Writes the requests of the run as the scenario's fixtures (see fixtures.ts). */
  private record(bin: Located, scenario: string): void {
    const meta = { agent: this.agent.name, version: bin.version, scenario };
    const scrub = {
      key: this.setup.key,
      replace: [
        [this.setup.home, '$HOME'],
        [this.cwd, '$WORK'],
        [this.tap.origin, 'http://127.0.0.1:PORT'],
      ].sort((a, b) => b[0]!.length - a[0]!.length) as Array<[string, string]>,
    };
    const dir = writeFixtures(
      this.agent.name,
      scenario,
      this.tap.exchanges.map((exchange) => toFixture(exchange, meta, scrub)),
    );
    this.t.diagnostic(`recorded ${this.tap.exchanges.length} requests in ${dir}`);
  }

  /** What the agent printed and what the gateway answered it, for a failure message. */
  explain(run: RunResult): string {
    const refusals = new Map<string, number>();
    for (const e of this.tap.exchanges.filter((e) => e.status >= 400)) {
      const line = `  ${e.method} ${e.path} -> ${e.status} ${e.response_body.toString('utf8').slice(0, 600)}`;
      refusals.set(line, (refusals.get(line) ?? 0) + 1);
    }
    return [
      `exit ${run.code ?? run.signal}${run.timed_out ? ` (killed after ${RUN_TIMEOUT_MS} ms)` : ''}; the agent says: ${run.outcome.error ?? run.outcome.text.slice(0, 300)}`,
      `gateway answers: ${this.tap.exchanges.map((e) => `${e.method} ${e.path} ${e.status}${e.error ? ` (${e.error})` : ''}`).join(', ') || 'none'}`,
      ...(refusals.size
        ? ['refused:', ...[...refusals].map(([line, n]) => (n > 1 ? `${line} (${n} times)` : line))]
        : []),
      `stderr (end):\n${run.stderr.slice(-4000)}`,
      `stdout (end):\n${run.stdout.slice(-2000)}`,
    ].join('\n');
  }

  /** Exit 0, the agent's own result says success, every answer below 400, loopback only. */
  assertClean(run: RunResult): void {
    const name = this.agent.name;
    const why = this.explain(run);
    assert.ok(!run.timed_out, `${name}: still running after ${RUN_TIMEOUT_MS} ms, killed\n${why}`);
    assert.ok(this.tap.exchanges.length > 0, `${name}: sent the gateway no request\n${why}`);
    const refused = this.tap.exchanges.filter((e) => e.status >= 400);
    assert.deepEqual(
      refused.map((e) => `${e.method} ${e.path} ${e.status}`),
      [],
      `${name}: the gateway refused requests\n${why}`,
    );
    assert.equal(run.code, 0, `${name}: exited ${run.code ?? run.signal}\n${why}`);
    assert.ok(run.outcome.ok, `${name}: the turn did not complete: ${run.outcome.error}\n${why}`);
    if (run.outside)
      assert.deepEqual(
        run.outside,
        [],
        `${name}: reached beyond loopback (telemetry, updates, catalogs?)\n${why}`,
      );
  }

  /** The built-in engine answered in text: asked for nothing but a hello, it called no tool. */
  assertAnsweredInText(run: RunResult): void {
    const calls = this.tap.exchanges.filter((e) =>
      TOOL_CALL.test(e.response_body.toString('utf8')),
    );
    assert.deepEqual(
      calls.map((e) => `${e.method} ${e.path}`),
      [],
      `${this.agent.name}: the built-in engine called the agent's tools, though the prompt names none\n${this.explain(run)}`,
    );
  }

  /**
   * The wallet moved by exactly the sum of the costs the gateway reported to the agent, and
   * each reported bill is its usage record's. Read from the store once every request is
   * settled: the gateway is stopped (SIGTERM finishes what is in flight) and started again on
   * the same store. A request the agent hung up on before its bill (none is expected) would
   * show as a record marked client_closed, matched by a broken exchange.
   */
  async assertBilledExactly(run: RunResult): Promise<void> {
    const name = this.agent.name;
    const gateway = await this.settle();
    const bills = this.tap.exchanges.map((e) => ({ exchange: e, bill: reportedBill(e) }));
    const reported = bills.flatMap(({ bill }) => (bill ? [bill] : []));
    assert.ok(reported.length > 0, `${name}: no answer carried a bill\n${this.explain(run)}`);
    const wallet = await this.wallet(gateway);
    const records = await this.usageRecords(gateway);
    const moved = this.balance_before - wallet.balance;
    const recorded = records.reduce((sum, r) => sum + r.cost, 0);
    assert.equal(
      moved,
      recorded,
      `${name}: the wallet moved ${moved} micro-units, its usage records say ${recorded}`,
    );
    for (const bill of reported) {
      const record = records.find((r) => r.request_id === bill.request_id);
      assert.ok(record, `${name}: no usage record for the reported request ${bill.request_id}`);
      assert.equal(
        record.cost,
        bill.cost,
        `${name}: ${bill.request_id} reported ${bill.cost}, recorded ${record.cost}`,
      );
    }
    const unreported = records.filter((r) => !reported.some((b) => b.request_id === r.request_id));
    const cut = bills.filter(({ exchange, bill }) => !bill && exchange.error);
    assert.ok(
      unreported.every((r) => r.status === 'client_closed') && unreported.length <= cut.length,
      `${name}: usage records the agent was never told of: ${JSON.stringify(unreported)} (${unbilled(this.tap.exchanges)})`,
    );
    if (unreported.length === 0) {
      const sum = reported.reduce((total, b) => total + b.cost, 0);
      assert.equal(
        moved,
        sum,
        `${name}: the wallet moved ${moved} micro-units, the answers reported ${sum}`,
      );
    } else {
      this.t.diagnostic(`${name}: hung up on ${unreported.length} requests before their bill`);
    }
  }

  /** Stops the gateway (it settles what is in flight) and starts it again on the same store. */
  private async settle(): Promise<Gateway> {
    if (this.settled) return this.settled;
    await this.tap.close();
    assert.equal(await this.gateway.stop(), 0, `the gateway did not stop cleanly`);
    this.settled = await startGateway({ data_dir: this.gateway.data_dir });
    return this.settled;
  }

  private async wallet(gateway: Gateway): Promise<{ balance: number }> {
    const response = await fetch(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${this.setup.key}` },
    });
    const body = (await response.json()) as { balance: number };
    assert.equal(response.status, 200, JSON.stringify(body));
    return { balance: micros(body.balance) };
  }

  private async usageRecords(
    gateway: Gateway,
  ): Promise<Array<{ request_id: string; cost: number; status: string }>> {
    const response = await fetch(`${gateway.url}/api/reports/ai-usage?limit=500`, {
      headers: { authorization: `Bearer ${this.setup.key}` },
    });
    const body = (await response.json()) as { data: { columns: string[]; rows: unknown[] } };
    assert.equal(response.status, 200, JSON.stringify(body));
    return body.data.rows.map((row) => {
      const r = row as Record<string, unknown>;
      return {
        request_id: String(r.request_id),
        cost: micros(Number(r.cost)),
        status: String(r.status),
      };
    });
  }

  async close(): Promise<void> {
    await this.tap.close();
    const last = this.settled ?? this.gateway;
    assert.equal(await last.stop(), 0, `the gateway did not stop cleanly`);
    if (!this.settled) return;
    const verify = await runVerify(last.data_dir);
    assert.equal(
      verify.code,
      0,
      `verify after ${this.agent.name}: ${verify.stdout}${verify.stderr}`,
    );
  }
}

/** A tool call in an answer of any protocol: Messages' tool_use, Responses' function_call, chat's tool_calls, Gemini's functionCall. */
const TOOL_CALL =
  /"type":\s*"(tool_use|function_call)"|"tool_calls":\s*\[\s*\{|"functionCall":\s*\{/;

/** The 200 answers that carried no bill (count_tokens, models, ...), for a message. */
function unbilled(exchanges: Exchange[]): string {
  const list = exchanges.filter((e) => e.status === 200 && reportedBill(e) === null);
  return list.length
    ? `unbilled: ${list.map((e) => `${e.method} ${e.path}${e.error ? ` (${e.error})` : ''}`).join(', ')}`
    : 'none unbilled';
}
