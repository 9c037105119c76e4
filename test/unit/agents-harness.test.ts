// The agents level's own checks can fail: the strace reader finds addresses beyond loopback,
// the bill reader finds each protocol's bill, and the scripted model picks a file-writing
// tool by its schema (or says it found none).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { outsideAddresses } from '../agents/run.js';
import { reportedBill, type Exchange } from '../agents/tap.js';
import { writeCall } from '../agents/task-model.js';

test('strace lines: DNS and remote peers are outside, loopback and unix sockets are not', () => {
  const trace = [
    '12085 connect(13, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0',
    '12087 connect(9, {sa_family=AF_INET, sin_port=htons(41387), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS',
    '21374 sendto(43, "\\xa3\\x79", 32, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 32',
    '300 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2606:4700::6810:85e5", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH',
    '301 connect(6, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
    '21376 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT',
    '13 sendto(13, [{nlmsg_len=20, nlmsg_type=RTM_GETADDR}], 20, 0, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 20',
  ].join('\n');
  assert.deepEqual(outsideAddresses(trace), ['10.255.255.53:53', '2606:4700::6810:85e5:443']);
  assert.deepEqual(outsideAddresses(''), []);
});

function exchange(type: string, body: string, headers: Record<string, string> = {}): Exchange {
  return {
    method: 'POST',
    path: '/v1/x',
    request_headers: {},
    request_body: Buffer.alloc(0),
    status: 200,
    response_headers: { 'content-type': type, ...headers },
    response_body: Buffer.from(body),
    error: null,
  };
}

test('bills: the JSON headers, and the x_aihub of each protocol stream', () => {
  const bill = { request_id: 'req_1', cost: 0.001234, balance: 10 };
  assert.deepEqual(
    reportedBill(
      exchange('application/json', '{}', {
        'x-aihub-cost': '0.001234',
        'x-aihub-request-id': 'req_1',
      }),
    ),
    { request_id: 'req_1', cost: 1234 },
  );
  const chat = `data: {"choices":[]}\n\ndata: ${JSON.stringify({ choices: [], x_aihub: bill })}\n\ndata: [DONE]\n\n`;
  const responses = `event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: { x_aihub: bill } })}\n\n`;
  const messages = `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', x_aihub: bill })}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
  for (const stream of [chat, responses, messages])
    assert.deepEqual(reportedBill(exchange('text/event-stream', stream)), {
      request_id: 'req_1',
      cost: 1234,
    });
  assert.equal(reportedBill(exchange('text/event-stream', 'data: {"choices":[]}\n\n')), null);
  assert.equal(reportedBill(exchange('application/json', '{"data":[]}')), null);
});

const fn = (name: string, parameters: Record<string, unknown>) => ({
  type: 'function',
  function: { name, parameters },
});
const task = { path: '/work/a.txt', content: "it's\n" };

test('the scripted model writes with a path-and-content tool, else a shell tool, by schema', () => {
  const edit = fn('Edit', {
    type: 'object',
    properties: {
      file_path: { type: 'string' },
      old_string: { type: 'string' },
      new_string: { type: 'string' },
    },
    required: ['file_path', 'old_string', 'new_string'],
  });
  const write = fn('Write', {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { file_path: { type: 'string' }, content: { type: 'string' } },
    required: ['file_path', 'content'],
    additionalProperties: false,
  });
  const shell = fn('exec_command', {
    type: 'object',
    properties: { cmd: { type: 'string' }, workdir: { type: 'string' } },
    required: ['cmd'],
  });
  assert.deepEqual(writeCall([edit, shell, write], task), {
    name: 'Write',
    arguments: { file_path: '/work/a.txt', content: "it's\n" },
  });
  assert.deepEqual(writeCall([edit, shell], task), {
    name: 'exec_command',
    arguments: { cmd: `printf '%s' 'it'\\''s\n' > '/work/a.txt'` },
  });
  const argv = fn('shell', {
    type: 'object',
    properties: { command: { type: 'array', items: { type: 'string' } } },
    required: ['command'],
  });
  assert.deepEqual(writeCall([argv], task), {
    name: 'shell',
    arguments: { command: ['bash', '-lc', `printf '%s' 'it'\\''s\n' > '/work/a.txt'`] },
  });
  const none = writeCall([edit], task);
  assert.ok('problem' in none && none.problem.includes('Edit'));
  const strict = fn('write', {
    type: 'object',
    properties: {
      filePath: { type: 'string', pattern: '^relative/' },
      content: { type: 'string' },
    },
    required: ['filePath', 'content'],
  });
  const refused = writeCall([strict], task);
  assert.ok('problem' in refused && refused.problem.includes("write's schema refuses"));
});
