// npm run bench:upstream — what one upstream call costs the gateway in CPU, by part, side by
// side in one run: the `openai-compatible` engine's call (since issue #40 its own POST on the
// target's undici pool, the answer read and checked), the openai SDK on the same transport (the
// engine's call before #40), the same request on the bare undici pool (the
// floor of any client on that pool), on the engine's transport without the SDK
// (llm/transport.ts: what the gateway adds to the pool, as a fetch and as the whole-answer read
// the engine uses since #40), and the SDK's own per-call work
// with a canned answer in place of the network. Against the scripted upstream of bench:chat, in one process, the
// three interleaved in rounds so that a shared machine's drift falls on all of them alike.
// `bench:chat` measures the whole gateway; this one says which part of a call costs what.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { Pool } from 'undici';
import {
  OpenAICompatibleEngine,
  openaiCompatibleEngineSchema,
} from '../../gateway/llm/engines/openai-compatible.js';
import type { ChatMessage } from '../../gateway/llm/messages.js';
import {
  pooledFetch,
  readBounded,
  upstreamPool,
  UpstreamClient,
  type ReadableBody,
} from '../../gateway/llm/transport.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);

const upstream = spawn(
  process.execPath,
  ['--import', 'tsx', resolve(import.meta.dirname, '../support/bench-upstream.ts')],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [line] = (await once(createInterface({ input: upstream.stdout! }), 'line')) as [string];
const base_url = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}/v1`;

const messages = [
  { role: 'user', content: 'Write a haiku about a gateway that bills every token.' },
] as unknown as ChatMessage[];
const engine = new OpenAICompatibleEngine(
  'bench',
  openaiCompatibleEngineSchema.parse({
    type: 'openai-compatible',
    base_url,
    model: 'scripted',
    timeout_ms: 30_000,
  }),
);
const pool = new Pool(new URL(base_url).origin, { connections: 256 });
const transport_options = { connections: 256, timeout_ms: 30_000 };
const transport_pool = upstreamPool(base_url, transport_options);
const transport = pooledFetch(transport_pool, base_url, transport_options);
const text_client = new UpstreamClient(base_url, transport_options);
const canned = JSON.stringify({
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'scripted',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const no_headers = {
  get: () => null,
  has: () => false,
  entries: () => [][Symbol.iterator](),
  forEach() {},
  [Symbol.iterator]: () => [][Symbol.iterator](),
};
const sdk_alone = new OpenAI({
  apiKey: 'none',
  baseURL: base_url,
  maxRetries: 0,
  timeout: 30_000,
  logLevel: 'off',
  fetch: (async (url: string) => ({
    status: 200,
    ok: true,
    url,
    headers: no_headers,
    body: null,
    text: async () => canned,
  })) as unknown as typeof fetch,
});

const sdk_on_transport = new OpenAI({
  apiKey: 'none',
  baseURL: base_url,
  maxRetries: 0,
  timeout: 30_000,
  logLevel: 'off',
  fetch: transport,
});

/** The engine's request, as the rows without the engine send it. */
const sameBody = () =>
  JSON.stringify({ temperature: 0.2, model: 'scripted', messages, max_tokens: 64 });
const SAME_HEADERS = { 'content-type': 'application/json', authorization: 'Bearer none' };

const ways: Array<[string, () => Promise<unknown>]> = [
  [
    "engine: its own POST, read from the pool's dispatch (#40)",
    () =>
      engine.complete({
        params: { temperature: 0.2 },
        messages,
        max_output_tokens: 64,
        prompt_tokens_estimate: 12,
        signal: new AbortController().signal,
      }),
  ],
  [
    'openai SDK on the same transport (the engine before #40)',
    async () => {
      const response = await sdk_on_transport.chat.completions
        .create(
          { model: 'scripted', messages: messages as never, max_tokens: 64, temperature: 0.2 },
          { signal: new AbortController().signal },
        )
        .asResponse();
      return JSON.parse(
        await readBounded(response.body as unknown as ReadableBody, 16 * 1024 * 1024, true),
      );
    },
  ],
  [
    'bare undici pool, same request',
    async () => {
      const body = sameBody();
      const answer = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { ...SAME_HEADERS },
        body,
        signal: new AbortController().signal,
      });
      return JSON.parse(await answer.body.text());
    },
  ],
  [
    "the engine's transport: requestText on the pool's dispatch",
    async () => {
      const body = sameBody();
      const answer = await text_client.requestText(
        {
          path: '/v1/chat/completions',
          method: 'POST',
          headers: { ...SAME_HEADERS },
          body,
          signal: new AbortController().signal,
        },
        { ok: 16 * 1024 * 1024, error: 64 * 1024 },
      );
      return JSON.parse(answer.text);
    },
  ],
  [
    "the engine's transport as a fetch, no SDK (same request)",
    async () => {
      const body = sameBody();
      const response = await transport(`${base_url}/chat/completions`, {
        method: 'POST',
        headers: new Headers(SAME_HEADERS),
        body,
        signal: new AbortController().signal,
      });
      return JSON.parse(
        await readBounded(response.body as unknown as ReadableBody, 16 * 1024 * 1024, true),
      );
    },
  ],
  [
    'openai SDK alone (canned answer, no network)',
    () =>
      sdk_alone.chat.completions
        .create(
          {
            model: 'scripted',
            messages: messages as unknown as OpenAI.ChatCompletionMessageParam[],
            max_tokens: 64,
            temperature: 0.2,
          },
          { signal: new AbortController().signal },
        )
        .asResponse(),
  ],
];

async function run(call: () => Promise<unknown>, calls: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < calls) await call();
    }),
  );
}

const cpu_us = new Map(ways.map(([name]) => [name, 0]));
for (const [, call] of ways) await run(call, 2_000); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of round % 2 === 0 ? ways : [...ways].reverse()) {
    const before = process.cpuUsage();
    await run(call, CALLS / ROUNDS);
    const used = process.cpuUsage(before);
    cpu_us.set(name, cpu_us.get(name)! + used.user + used.system);
  }
}
console.log(
  `\nCPU of this process per upstream call, ${CALLS} calls each, ${CONCURRENCY} at a time, ${ROUNDS} interleaved rounds (the upstream runs in its own process)`,
);
const engine_us = cpu_us.get(ways[0]![0])! / CALLS;
for (const [name] of ways) {
  const us = cpu_us.get(name)! / CALLS;
  console.log(
    `${name.padEnd(46)} ${us.toFixed(1).padStart(7)} µs/call  ${(us / engine_us).toFixed(2)} × the engine's`,
  );
}
await engine.close();
await pool.close();
await transport_pool.close();
await text_client.close();
upstream.kill('SIGTERM');
