// The requests an agent sent during a test run, kept as fixtures under
// test/fixtures/agents/<agent>/<scenario>/ so that unit tests replay them through the
// gateway's translation without the binaries (test/unit/chat/agent-fixtures.test.ts).
// Recorded by the agents level itself when AIHUB_RECORD_AGENT_FIXTURES=1 (`npm run
// record:agents`): scrubbed of the key, the temp dirs and the port, which vary per run.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Exchange } from './tap.js';

export const FIXTURES_DIR = resolve(import.meta.dirname, '../fixtures/agents');

export const RECORDING = process.env.AIHUB_RECORD_AGENT_FIXTURES === '1';

export interface AgentFixture {
  agent: string;
  version: string;
  scenario: string;
  method: string;
  /** Path and query as the agent sent them. */
  path: string;
  /** The status the gateway answered when it was recorded. */
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Headers that vary per run or carry the key; the rest are kept (they tell what the agent is). */
const DROPPED_HEADERS = new Set(['host', 'content-length', 'connection']);
const KEY_HEADERS = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key']);

export interface Scrub {
  key: string;
  /** Replacements of per-run text (temp dirs, the tap's origin) by placeholders. */
  replace: Array<[string, string]>;
}

export function toFixture(
  exchange: Exchange,
  meta: { agent: string; version: string; scenario: string },
  scrub: Scrub,
): AgentFixture {
  const clean = (text: string) => {
    let out = text.replaceAll(scrub.key, '<key>');
    for (const [from, to] of scrub.replace) out = out.replaceAll(from, to);
    return out;
  };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(exchange.request_headers)) {
    if (DROPPED_HEADERS.has(name) || value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    headers[name] = KEY_HEADERS.has(name) ? text.replace(/\S+$/, '<key>') : clean(text);
  }
  const raw = exchange.request_body.toString('utf8');
  let body: unknown = null;
  if (raw) {
    try {
      body = JSON.parse(clean(raw));
    } catch {
      body = clean(raw);
    }
  }
  return {
    ...meta,
    method: exchange.method,
    path: clean(exchange.path),
    status: exchange.status,
    headers,
    body,
  };
}

/** Replaces one scenario's fixtures with these. */
export function writeFixtures(agent: string, scenario: string, fixtures: AgentFixture[]): string {
  const dir = join(FIXTURES_DIR, agent, scenario);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  fixtures.forEach((fixture, index) => {
    const slug = fixture.path
      .replace(/\?.*$/, '')
      .replace(/^\/+/, '')
      .replace(/[^a-z0-9]+/gi, '-');
    const name = `${String(index + 1).padStart(2, '0')}-${fixture.method.toLowerCase()}-${slug}.json`;
    writeFileSync(join(dir, name), `${JSON.stringify(fixture, null, 2)}\n`);
  });
  return dir;
}

/** Every recorded fixture, with its file path. */
export function readFixtures(): Array<{ file: string; fixture: AgentFixture }> {
  const out: Array<{ file: string; fixture: AgentFixture }> = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.json'))
        out.push({ file: path, fixture: JSON.parse(readFileSync(path, 'utf8')) as AgentFixture });
    }
  };
  walk(FIXTURES_DIR);
  return out;
}
