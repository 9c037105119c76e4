// The requests the real coding agents sent (recorded by the agents level, test/agents, into
// test/fixtures/agents/<agent>/<scenario>/) replayed through the gateway's translation, so
// that a regression in what the gateway accepts from Claude Code, Codex CLI or opencode shows
// without their binaries: each request is parsed and validated by its protocol and turned
// into a chat call that the chat pipeline and an upstream accept, with the client's system
// text, tools and tool results where the client put them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatProtocol } from '../../../gateway/chat/protocols/chat/route.js';
import { methodOf } from '../../../gateway/chat/protocols/gemini/route.js';
import { parseGenerate } from '../../../gateway/chat/protocols/gemini/translate.js';
import { messagesProtocol } from '../../../gateway/chat/protocols/messages/translate.js';
import { responsesProtocol } from '../../../gateway/chat/protocols/responses/translate.js';
import type { ChatCall, Protocol } from '../../../gateway/chat/protocol.js';
import { chatRequestSchema } from '../../../gateway/chat/schema.js';
import { chatConfigSchema, isTierId } from '../../../gateway/chat/config.js';
import { outputLimit } from '../../../gateway/chat/steps/output-limit.js';
import { countPromptTokens } from '../../../gateway/llm/tokens.js';
import { AGENTS } from '../../agents/all.js';
import { readFixtures, type AgentFixture } from '../../agents/fixtures.js';

const PROTOCOL_BY_PATH: Array<[RegExp, Protocol]> = [
  [/^\/v1\/messages(\?|$)/, messagesProtocol],
  [/^\/v1\/responses(\?|$)/, responsesProtocol],
  [/^\/v1\/chat\/completions(\?|$)/, chatProtocol],
];

const fixtures = readFixtures();
/** The tiers of the embedded defaults, which the agents were recorded against. */
const TIERS = chatConfigSchema.parse({}).models;

test('every agent of the agents level has recorded requests of both scenarios', () => {
  for (const agent of AGENTS) {
    for (const scenario of ['builtin', 'write-file']) {
      assert.ok(
        fixtures.some(
          ({ fixture }) =>
            fixture.agent === agent.name && fixture.scenario === scenario && protocolOf(fixture),
        ),
        `no recorded ${scenario} request of ${agent.name}: run \`npm run record:agents\``,
      );
    }
  }
});

for (const { file, fixture } of fixtures) {
  const protocol = protocolOf(fixture);
  if (!protocol) continue; // a GET (models, ...) or a path outside the chat pipeline
  const name = `${fixture.agent} ${fixture.version} ${fixture.scenario}: ${fixture.method} ${fixture.path} (${file.replace(/^.*test\/fixtures\//, '')})`;
  test(`${name} translates to a chat call an upstream accepts`, () => {
    const body = fixture.body as Record<string, any>;
    let call: ChatCall;
    try {
      call = protocol.parse(structuredClone(body));
    } catch (error) {
      assert.fail(`${fixture.agent}: the gateway refuses its request: ${(error as Error).message}`);
    }
    const gemini = methodOf(pathOnly(fixture.path));
    assert.equal(call.model, gemini ? gemini.model : body.model);
    assert.equal(
      call.stream,
      gemini ? gemini.method === 'streamGenerateContent' : body.stream === true,
    );
    const chat = chatRequestSchema.safeParse({
      model: call.model,
      messages: call.messages,
      ...call.params,
    });
    assert.ok(
      chat.success,
      `${fixture.agent}: the chat call is not a valid chat request: ${chat.error?.message}`,
    );
    assertTools(fixture, call);
    assertSystemText(fixture, call);
    assertToolResults(fixture, call);
    assertOutputLimit(fixture, call);
  });
}

/** The pipeline's output limit for the request on its tier: within the tier's, never a refusal. */
function assertOutputLimit(fixture: AgentFixture, call: ChatCall): void {
  assert.ok(isTierId(call.model), `${fixture.agent}: recorded with ${call.model}, not a tier id`);
  const tier = TIERS[call.model];
  let limit: number;
  try {
    limit = outputLimit(tier, call, countPromptTokens(call.messages, call.params.tools));
  } catch (error) {
    assert.fail(
      `${fixture.agent}: the gateway refuses its output limit: ${(error as Error).message}`,
    );
  }
  assert.ok(
    limit >= 1 && limit <= tier.max_output_tokens,
    `${fixture.agent}: output limit ${limit}`,
  );
}

function protocolOf(fixture: AgentFixture): Protocol | undefined {
  if (fixture.method !== 'POST') return undefined;
  const gemini = methodOf(pathOnly(fixture.path));
  if (gemini && gemini.method !== 'countTokens') {
    const stream = gemini.method === 'streamGenerateContent' ? 'sse' : null;
    return {
      name: 'gemini',
      parse: (raw) => parseGenerate(raw, { model: gemini.model, stream }),
    };
  }
  return PROTOCOL_BY_PATH.find(([path]) => path.test(fixture.path))?.[1];
}

function pathOnly(path: string): string {
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

function isGemini(fixture: AgentFixture): boolean {
  return protocolOf(fixture)?.name === 'gemini';
}

/** The function tools the client declared, by protocol (namespaced and custom ones included). */
function declaredFunctions(fixture: AgentFixture): { names: string[]; count: number } {
  const body = fixture.body as Record<string, any>;
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  if (isGemini(fixture)) {
    const names = tools.flatMap((t) =>
      Array.isArray(t.functionDeclarations) ? t.functionDeclarations.map((d: any) => d.name) : [],
    );
    return { names, count: names.length };
  }
  if (protocolOf(fixture) === messagesProtocol) {
    // Custom tools have no type (or "custom"); server tools (web_search_..., bash_...) do.
    const custom = tools.filter((t) => t.type === undefined || t.type === 'custom');
    return { names: custom.map((t) => t.name), count: custom.length };
  }
  if (protocolOf(fixture) === responsesProtocol) {
    const plain = tools.filter((t) => t.type === 'function').map((t) => t.name as string);
    const inner = tools
      .filter((t) => t.type === 'namespace')
      .flatMap((t) => (Array.isArray(t.tools) ? t.tools : []))
      .filter((t: any) => t.type === 'function');
    return { names: plain, count: plain.length + inner.length };
  }
  const functions = tools.filter((t) => t.type === 'function');
  return { names: functions.map((t) => t.function?.name), count: functions.length };
}

/** Every function tool the client declared is offered to the model, and nothing else. */
function assertTools(fixture: AgentFixture, call: ChatCall): void {
  const offered: any[] = Array.isArray(call.params.tools) ? call.params.tools : [];
  const declared = declaredFunctions(fixture);
  const names = offered.map((t) => t.function?.name);
  assert.ok(
    offered.every((t) => t.type === 'function' && typeof t.function?.name === 'string'),
    `${fixture.agent}: a tool offered to the model is not a function tool`,
  );
  for (const name of declared.names)
    assert.ok(
      names.includes(name),
      `${fixture.agent}: its tool ${name} is not offered to the model`,
    );
  assert.equal(
    offered.length,
    declared.count,
    `${fixture.agent}: ${declared.count} function tools declared, ${offered.length} offered (${names.join(', ')})`,
  );
}

/** The client's system text (top level and entries inside the conversation) reaches the model. */
function assertSystemText(fixture: AgentFixture, call: ChatCall): void {
  const body = fixture.body as Record<string, any>;
  const blocks: string[] = [];
  const add = (content: unknown) => {
    if (typeof content === 'string') blocks.push(content);
    else if (Array.isArray(content))
      for (const part of content) if (typeof part?.text === 'string') blocks.push(part.text);
  };
  const entries: any[] =
    protocolOf(fixture) === responsesProtocol
      ? Array.isArray(body.input)
        ? body.input
        : []
      : (body.messages ?? []);
  if (protocolOf(fixture) === messagesProtocol) add(body.system);
  if (isGemini(fixture)) add(body.systemInstruction?.parts ?? body.systemInstruction);
  if (protocolOf(fixture) === responsesProtocol) add(body.instructions);
  for (const entry of entries)
    if (entry?.role === 'system' || entry?.role === 'developer') add(entry.content);
  const system = call.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) =>
      typeof m.content === 'string'
        ? m.content
        : (m.content ?? []).map((part: any) => part?.text ?? '').join('\n'),
    )
    .join('\n');
  for (const block of blocks) {
    const probe = block.trim().slice(0, 200);
    if (probe)
      assert.ok(
        system.includes(probe),
        `${fixture.agent}: system text is lost: ${JSON.stringify(probe.slice(0, 80))}`,
      );
  }
}

/** Each tool result the client sent follows the assistant call it answers, as chat requires. */
function assertToolResults(fixture: AgentFixture, call: ChatCall): void {
  const calls = new Set<string>();
  for (const message of call.messages) {
    if (message.role === 'assistant')
      for (const c of (message as { tool_calls?: Array<{ id: string }> }).tool_calls ?? [])
        calls.add(c.id);
    if (message.role === 'tool')
      assert.ok(
        calls.has(message.tool_call_id),
        `${fixture.agent}: a tool result (${message.tool_call_id}) comes before its call`,
      );
  }
  if (sentToolResult(fixture))
    assert.ok(
      call.messages.some((m) => m.role === 'tool'),
      `${fixture.agent}: the tool result it sent is not in the chat call`,
    );
}

function sentToolResult(fixture: AgentFixture): boolean {
  const body = fixture.body as Record<string, any>;
  const protocol = protocolOf(fixture);
  if (protocol?.name === 'gemini')
    return (body.contents ?? []).some(
      (c: any) => Array.isArray(c.parts) && c.parts.some((p: any) => p?.functionResponse),
    );
  if (protocol === messagesProtocol)
    return (body.messages ?? []).some(
      (m: any) => Array.isArray(m.content) && m.content.some((b: any) => b?.type === 'tool_result'),
    );
  if (protocol === responsesProtocol)
    return (
      Array.isArray(body.input) && body.input.some((i: any) => i?.type === 'function_call_output')
    );
  return (body.messages ?? []).some((m: any) => m.role === 'tool');
}
