// The translation of what real agents send, without HTTP: Anthropic system entries among the
// messages, Anthropic-defined and server tools, Responses namespace and hosted tools, the
// chat names of namespaced functions, and Anthropic's wording of validation errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../../gateway/http/errors.ts';
import { messagesProtocol } from '../../../gateway/chat/protocols/messages/translate.ts';
import { chatTools as anthropicTools } from '../../../gateway/chat/protocols/messages/tools.ts';
import { responsesProtocol } from '../../../gateway/chat/protocols/responses/translate.ts';
import { chatTools, clientName } from '../../../gateway/chat/protocols/responses/tools.ts';
import { flatName } from '../../../gateway/chat/protocols/tool-names.ts';

const roles = (messages: { role: string }[]) => messages.map((m) => m.role);

test('messages: a system entry after a tool call waits for its results; one at the end stays last', () => {
  const call = messagesProtocol.parse({
    model: 'service-ai-lite',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: {} }] },
      { role: 'system', content: 'first note' },
      { role: 'developer', content: 'second note' },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
      { role: 'system', content: [{ type: 'text', text: 'last note' }] },
    ],
  });
  assert.deepEqual(roles(call.messages), [
    'user',
    'assistant',
    'tool',
    'system',
    'system',
    'system',
  ]);
  assert.deepEqual(
    call.messages.slice(3).map((m) => m.content),
    ['first note', 'second note', 'last note'],
  );
});

test('messages: for a native Messages target, a system entry becomes a <system-reminder> user turn', () => {
  const raw = {
    model: 'service-ai-lite',
    max_tokens: 10,
    messages: [
      { role: 'user', content: 'go' },
      { role: 'system', content: 'note' },
    ],
  };
  const call = messagesProtocol.parse(raw);
  assert.deepEqual((call.original.messages as unknown[])[1], {
    role: 'user',
    content: [{ type: 'text', text: '<system-reminder>\nnote\n</system-reminder>' }],
  });
  const plain = { ...raw, messages: [{ role: 'user', content: 'go' }] };
  assert.equal(messagesProtocol.parse(plain).original, plain, 'untouched without system entries');
});

test('messages: a system entry carries text only; errors are worded as Anthropic words them', () => {
  const refused = (body: unknown) => {
    try {
      messagesProtocol.parse(body);
    } catch (error) {
      assert.ok(error instanceof ApiError);
      return error.message;
    }
    assert.fail('accepted');
  };
  assert.match(
    refused({
      model: 'm',
      max_tokens: 1,
      messages: [
        {
          role: 'system',
          content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }],
        },
      ],
    }),
    /^messages\.0\.content: a image block cannot be system text/,
  );
  assert.equal(
    refused({ model: 'm', messages: [] }),
    'messages: must contain at least one message',
  );
  assert.equal(
    refused({ model: 'm', max_tokens: 'x', messages: [{ role: 'user', content: 'hi' }] }),
    'max_tokens: Input should be a valid number',
  );
  assert.equal(
    refused({
      model: 'm',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'x' }],
    }),
    'tools.0: Invalid input',
  );
});

test('Anthropic tools: client tools become functions of their trained input, server tools are dropped', () => {
  const { functions, dropped, warnings } = anthropicTools([
    { type: 'bash_20241022', name: 'bash' },
    { type: 'text_editor_20250124', name: 'str_replace_editor' },
    { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
    { type: 'memory_20250818', name: 'memory' },
    { type: 'computer_20250124', name: 'computer', display_width_px: 1024 },
    { type: 'code_execution_20250825', name: 'code_execution' },
    { type: 'web_fetch_20250910', name: 'web_fetch' },
    { type: 'mcp_toolset', mcp_server_name: 'x' },
    { name: 'Write', input_schema: { type: 'object' } },
  ] as never);
  assert.deepEqual(
    functions.map((f) => f.function.name),
    ['bash', 'str_replace_editor', 'str_replace_based_edit_tool', 'memory', 'Write'],
  );
  const commands = (index: number) =>
    (functions[index]!.function.parameters.properties as { command: { enum: string[] } }).command
      .enum;
  assert.ok(commands(1).includes('undo_edit'), 'the 2025-01 editor still has undo_edit');
  assert.ok(!commands(2).includes('undo_edit'), 'the 2025-07 editor has not');
  assert.deepEqual(dropped, ['computer', 'code_execution', 'web_fetch']);
  assert.equal(warnings.length, 4);
  assert.match(warnings[0]!, /^tools\[4\] \(type computer_20250124\) dropped: computer use/);
  assert.match(warnings[3]!, /^tools\[7\] \(type mcp_toolset\) dropped/);
});

test('messages: tool_choice naming a dropped tool is refused; with no tool left it is dropped', () => {
  const base = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
  const web = { type: 'web_search_20250305', name: 'web_search' };
  assert.throws(
    () =>
      messagesProtocol.parse({
        ...base,
        tools: [web],
        tool_choice: { type: 'tool', name: 'web_search' },
      }),
    /tool_choice\.name: the tool `web_search` is not available/,
  );
  const call = messagesProtocol.parse({ ...base, tools: [web], tool_choice: { type: 'any' } });
  assert.equal(call.params.tools, undefined);
  assert.equal(call.params.tool_choice, undefined);
  assert.equal(call.warnings.length, 1);
});

test('Responses tools: namespaces flattened, hosted tools dropped with a warning each', () => {
  const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });
  const { functions, names, warnings } = chatTools([
    fn('shell'),
    { type: 'namespace', name: 'mcp__files', tools: [fn('read'), { type: 'web_search' }] },
    { type: 'web_search' },
    { type: 'file_search', vector_store_ids: [] },
    { type: 'code_interpreter', container: { type: 'auto' } },
    { type: 'image_generation' },
    { type: 'local_shell' },
    { type: 'mcp', server_label: 'x' },
    { type: 'computer_use_preview' },
  ] as never);
  assert.deepEqual(
    functions.map((f) => f.function.name),
    ['shell', 'mcp__files__read'],
  );
  assert.deepEqual(clientName(names, 'mcp__files__read'), {
    name: 'read',
    namespace: 'mcp__files',
  });
  assert.deepEqual(clientName(names, 'shell'), { name: 'shell' });
  assert.equal(warnings.length, 8);
  assert.match(warnings[0]!, /^tools\[1\]\.tools\[1\] \(type web_search\) dropped/);
  assert.match(warnings.at(-1)!, /^tools\[8\] \(type computer_use_preview\) dropped/);
});

test('a namespaced name that is no valid chat name gets a stable hashed one', () => {
  assert.equal(flatName('multi_agent_v1', 'spawn_agent'), 'multi_agent_v1__spawn_agent');
  const long = flatName('mcp__a_server_with_a_very_long_name_indeed', 'and_a_long_tool_name_too');
  assert.match(long, /^[A-Za-z0-9_-]{1,64}$/);
  assert.equal(
    long,
    flatName('mcp__a_server_with_a_very_long_name_indeed', 'and_a_long_tool_name_too'),
  );
  assert.notEqual(flatName('a.b', 'c'), flatName('a_b', 'c'), 'different pairs, different names');
});

test('responses: a function_call item with a namespace goes upstream under its flat name', () => {
  const call = responsesProtocol.parse({
    model: 'm',
    input: [
      {
        type: 'function_call',
        call_id: 'c1',
        namespace: 'multi_agent_v1',
        name: 'spawn_agent',
        arguments: '{}',
      },
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
    ],
  });
  const assistant = call.messages[0] as { tool_calls: { function: { name: string } }[] };
  assert.equal(assistant.tool_calls[0]!.function.name, 'multi_agent_v1__spawn_agent');
});

test('Responses: a malformed function tool is still refused, not dropped', () => {
  assert.throws(
    () => responsesProtocol.parse({ model: 'm', input: 'hi', tools: [{ type: 'function' }] }),
    /tools\[0\]: a function tool needs a name/,
  );
});
