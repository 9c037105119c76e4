import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConversationStore, MAX_CONVERSATIONS, titleFor } from '../../../extension/chat/history.js';
import type { ChatEntry } from '../../../extension/chat/protocol.js';
import { promptChars, toMicros, utcDay, worstCaseMicros } from '../../../extension/spendMath.js';

test('the worst case is prompt tokens at the input price plus every allowed output token', () => {
  const lite = {
    id: 'service-ai-lite',
    inputMicrosPerMillion: 15_000_000,
    outputMicrosPerMillion: 60_000_000,
    currency: 'INR',
  };
  assert.equal(worstCaseMicros(lite, 1_000, 1_024), 15_000 + 61_440);
  assert.equal(toMicros(0.000123), 123);
  assert.equal(utcDay(new Date('2026-11-22T23:59:59Z')), '2026-11-22');
  assert.equal(promptChars([{ content: 'ab' }, { content: 'cde' }]), 5);
});

/** VS Code's Memento contract, kept in memory (what workspaceState is, minus the disk). */
class MemoryMemento {
  private readonly values = new Map<string, unknown>();
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  get<T>(key: string, fallback?: T): T {
    return (this.values.has(key) ? structuredClone(this.values.get(key)) : fallback) as T;
  }
  async update(key: string, value: unknown): Promise<void> {
    if (value === undefined) this.values.delete(key);
    else this.values.set(key, structuredClone(value));
  }
}

const user = (text: string): ChatEntry => ({ id: text, role: 'user', text });

test('conversations: saved, listed newest first, renamed, deleted; an empty one is not kept', async () => {
  const memento = new MemoryMemento();
  const store = new ConversationStore(memento as never);
  await store.save('a', [user('first question')], undefined);
  await new Promise((r) => setTimeout(r, 2));
  await store.save('b', [user('second')], undefined);
  await store.save('empty', [], undefined);
  assert.deepEqual(
    store.list().map((c) => [c.id, c.title]),
    [
      ['b', 'second'],
      ['a', 'first question'],
    ],
  );
  assert.equal(await store.rename('a', '  Renamed  '), true);
  assert.equal(
    new ConversationStore(memento as never).get('a')?.title,
    'Renamed',
    'kept across restarts',
  );
  assert.deepEqual(store.entries('a'), [user('first question')]);
  assert.equal(await store.rename('__proto__', 'x'), false);
  assert.deepEqual(store.entries('__proto__'), []);
  assert.equal(await store.delete('a'), true);
  assert.deepEqual(store.entries('a'), []);
  assert.ok(!memento.keys().some((k) => k.endsWith('.a')), 'the entries are gone too');
});

test('conversations are bounded: the oldest go first', async () => {
  const memento = new MemoryMemento();
  const store = new ConversationStore(memento as never);
  for (let i = 0; i < MAX_CONVERSATIONS + 3; i++)
    await store.save(`c${i}`, [user(`q${i}`)], undefined);
  assert.equal(store.list().length, MAX_CONVERSATIONS);
  assert.equal(store.get('c0'), undefined);
  assert.equal(memento.keys().length, MAX_CONVERSATIONS + 1, 'index plus one key per conversation');
});

test('a title is the first question on one line, shortened', () => {
  assert.equal(titleFor([user('  How do\nI sort?  ')]), 'How do I sort?');
  assert.equal(titleFor([user('x'.repeat(200))]).length, 80);
  assert.equal(titleFor([]), 'New chat');
});
