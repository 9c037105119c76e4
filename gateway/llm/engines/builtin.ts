// The built-in offline engine: deterministic, no network, no model weights. It answers the
// three things the editor extension asks for (chat, explain this code, generate code) well
// enough for a demo, says plainly that it is the offline engine, and streams token by token
// with exact usage, so every path of the gateway (billing included) works on a fresh clone.
// It is also a test double that keeps the contracts of structured outputs and tools
// (builtin-tools.ts, builtin-schema.ts; docs/chat-api.md#the-built-in-engine-as-a-test-double).
import { setTimeout as sleep } from 'node:timers/promises';
import { decode, encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { z } from 'zod';
import type { ChatMessage } from '../messages.js';
import { countPromptTokens, countTextTokens } from '../tokens.js';
import {
  UpstreamError,
  type EmbedRequest,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
  type UpstreamEmbeddings,
} from '../types.js';
import { embedText } from './builtin-embed.js';
import { fillMiddle, parseFim } from './builtin-fim.js';
import { Rng } from './builtin-schema.js';
import {
  lastUserText,
  plannedJson,
  plannedToolCalls,
  toolResultsAnswer,
  trailingToolResults,
  uncalledToolsNote,
  type ToolCall,
} from './builtin-tools.js';

const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };
const NOTE =
  "I'm AIHub's built-in offline engine: I run inside the gateway without a network or a language model";
/** How JSON answers name their author, where prose would carry NOTE. */
const ENGINE_NAME = 'AIHub built-in offline engine';

/** The config of a `builtin` target (a tier's entry in `chat.engines`). */
export const builtinEngineSchema = z.strictObject({
  type: z.literal('builtin'),
  /** Pause between streamed tokens, so a demo looks like a model typing; 0 streams at full speed. */
  token_interval_ms: z.int().min(0).max(1_000).default(0),
});
export type BuiltinEngineConfig = z.output<typeof builtinEngineSchema>;

export class BuiltinEngine implements Engine {
  readonly type = 'builtin';
  constructor(private readonly config: BuiltinEngineConfig) {}

  async complete(request: EngineRequest): Promise<UpstreamCompletion> {
    const plans = planChoices(request);
    return {
      choices: plans.map((plan, index) => ({
        index,
        message: plan.tool_calls
          ? { role: 'assistant', content: null, tool_calls: plan.tool_calls }
          : { role: 'assistant', content: plan.pieces.join('') },
        finish_reason: plan.finish_reason,
        ...(plan.stop_reason !== null ? { stop_reason: plan.stop_reason } : {}),
        logprobs: plan.logprobs ? { content: plan.logprobs, refusal: null } : null,
      })),
      usage: usageOf(request, plans),
    };
  }

  async *stream(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    const plans = planChoices(request);
    for (const [index, plan] of plans.entries()) {
      yield {
        choices: [
          {
            index,
            delta: { role: 'assistant', content: plan.tool_calls ? null : '' },
            finish_reason: null,
          },
        ],
      };
      if (plan.tool_calls) {
        yield* toolCallChunks(index, plan.tool_calls, plan.pieces);
      } else {
        for (const [at, piece] of plan.pieces.entries()) {
          if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
          if (this.config.token_interval_ms > 0) await sleep(this.config.token_interval_ms);
          const logprobs = plan.logprobs
            ? { content: [plan.logprobs[at]!], refusal: null }
            : undefined;
          yield {
            choices: [
              {
                index,
                delta: { content: piece },
                finish_reason: null,
                ...(logprobs ? { logprobs } : {}),
              },
            ],
          };
        }
      }
      yield {
        choices: [
          {
            index,
            delta: {},
            finish_reason: plan.finish_reason,
            ...(plan.stop_reason !== null ? { stop_reason: plan.stop_reason } : {}),
          },
        ],
      };
    }
    yield { choices: [], usage: usageOf(request, plans) };
  }

  async embed(request: EmbedRequest): Promise<UpstreamEmbeddings> {
    return {
      data: request.input.map((text, index) => ({
        index,
        embedding: embedText(text, request.dimensions ?? undefined),
      })),
      usage: { prompt_tokens: request.input.reduce((sum, text) => sum + countTextTokens(text), 0) },
    };
  }

  async close(): Promise<void> {}
}

/** At most this many choices (the request schema's bound on `n`). */
const MAX_CHOICES = 8;

interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

interface Plan {
  /** One piece per token, except that a character spanning tokens is sent whole; the arguments of a tool call. */
  pieces: string[];
  completion_tokens: number;
  finish_reason: 'stop' | 'length' | 'tool_calls';
  /** The stop sequence the text was cut at (vLLM's `stop_reason` of a choice), else null. */
  stop_reason: string | null;
  tool_calls: ToolCall[] | null;
  logprobs: TokenLogprob[] | null;
}

/** A choice's tool calls as a stream: each call's id and name, then its arguments piece by piece. */
function* toolCallChunks(
  index: number,
  tool_calls: ToolCall[],
  pieces: string[],
): Generator<UpstreamChunk> {
  for (const [call_index, call] of tool_calls.entries()) {
    yield {
      choices: [
        {
          index,
          delta: {
            tool_calls: [
              {
                index: call_index,
                id: call.id,
                type: 'function',
                function: { name: call.function.name, arguments: '' },
              },
            ],
          },
          finish_reason: null,
        },
      ],
    };
    for (const piece of pieces)
      yield {
        choices: [
          {
            index,
            delta: { tool_calls: [{ index: call_index, function: { arguments: piece } }] },
            finish_reason: null,
          },
        ],
      };
  }
}

function usageOf(request: EngineRequest, plans: Plan[]) {
  return {
    prompt_tokens: countPromptTokens(request.messages, request.params.tools),
    completion_tokens: plans.reduce((sum, plan) => sum + plan.completion_tokens, 0),
  };
}

/** `n` choices; each one differs by its index in the seed, and the same request and `seed` give the same answer. */
function planChoices(request: EngineRequest): Plan[] {
  const n = Math.min(Math.max(1, Number(request.params.n ?? 1) || 1), MAX_CHOICES);
  const base_seed = request.params.seed ?? '';
  return Array.from({ length: n }, (_, index) =>
    planChoice(request, `${String(base_seed)}#${index}`, index, n),
  );
}

function planChoice(request: EngineRequest, seed: string, index: number, n: number): Plan {
  const { params, messages } = request;
  const tool_calls = plannedToolCalls(params, messages, seed);
  if (tool_calls.length) {
    const cut = cutTokens(tool_calls[0]!.function.arguments, request.max_output_tokens);
    tool_calls[0]!.function.arguments = cut.pieces.join('');
    return {
      pieces: cut.pieces,
      completion_tokens: cut.completion_tokens,
      finish_reason: cut.truncated ? 'length' : 'tool_calls',
      stop_reason: null,
      tool_calls,
      logprobs: null,
    };
  }
  let text = plannedJson(params, messages, seed, ENGINE_NAME);
  if (text === null) {
    const results = trailingToolResults(messages);
    text = results.length
      ? toolResultsAnswer(results, NOTE)
      : answer(messages) + uncalledToolsNote(params);
    if (n > 1) text += `\n\n(Choice ${index + 1} of ${n}.)`;
  }
  // The text ends before the first stop sequence it contains (the earliest match wins).
  const stops = params.stop;
  let stop_reason: string | null = null;
  let stop_at = text.length;
  for (const stop of typeof stops === 'string'
    ? [stops]
    : Array.isArray(stops)
      ? (stops as string[])
      : []) {
    const at = typeof stop === 'string' && stop ? text.indexOf(stop) : -1;
    if (at >= 0 && at < stop_at) {
      stop_at = at;
      stop_reason = stop;
    }
  }
  text = text.slice(0, stop_at);
  const cut = cutTokens(text, request.max_output_tokens);
  const top =
    params.logprobs === true
      ? Math.min(Math.max(0, Number(params.top_logprobs ?? 0) || 0), 20)
      : -1;
  return {
    pieces: cut.pieces,
    completion_tokens: cut.completion_tokens,
    finish_reason: cut.truncated ? 'length' : 'stop',
    stop_reason: cut.truncated ? null : stop_reason,
    tool_calls: null,
    logprobs: top >= 0 ? cut.pieces.map((piece, at) => logprobOf(piece, at, top, seed)) : null,
  };
}

/** The text cut into real tokens, capped by the output limit. */
function cutTokens(
  text: string,
  max_output_tokens: number,
): { pieces: string[]; completion_tokens: number; truncated: boolean } {
  const tokens = encode(text, ENCODE_OPTIONS);
  const completion_tokens = Math.min(tokens.length, max_output_tokens);
  const pieces: string[] = [];
  let pending: number[] = [];
  for (let i = 0; i < completion_tokens; i++) {
    pending.push(tokens[i]!);
    const piece = decode(pending);
    if (piece.endsWith('\uFFFD') && pending.length < 4 && i + 1 < completion_tokens) continue;
    pieces.push(piece);
    pending = [];
  }
  return { pieces, completion_tokens, truncated: completion_tokens < tokens.length };
}

/** Well-formed, deterministic log probabilities: the chosen token is the most likely, alternatives follow in falling order. */
function logprobOf(piece: string, at: number, top: number, seed: string): TokenLogprob {
  const rng = new Rng(`${seed}\u0000${at}\u0000${piece}`);
  const logprob = -Math.round(rng.next() * 500) / 1000;
  const bytes = [...Buffer.from(piece, 'utf8')];
  const alternatives = Array.from({ length: Math.max(0, top - 1) }, (_, k) => {
    const token = decode([(encode(piece, ENCODE_OPTIONS)[0] ?? 0) + k + 1]);
    return {
      token,
      logprob: logprob - 1 - k - Math.round(rng.next() * 1000) / 1000,
      bytes: [...Buffer.from(token, 'utf8')],
    };
  });
  return {
    token: piece,
    logprob,
    bytes,
    top_logprobs: top > 0 ? [{ token: piece, logprob, bytes }, ...alternatives] : [],
  };
}

export function answer(messages: readonly ChatMessage[]): string {
  const prompt = lastUserText(messages);
  const fim = parseFim(prompt);
  if (fim) return fillMiddle(fim.prefix, fim.suffix);
  const code = extractCode(prompt);
  if (/\b(explain|what does|how does|walk me through|describe)\b/i.test(prompt) && code)
    return explain(code);
  if (/\b(generate|write|create|implement|make|scaffold)\b/i.test(prompt)) return generate(prompt);
  if (code && prompt.length - code.text.length < 40) return explain(code);
  return chat(prompt, messages.length);
}

interface Code {
  text: string;
  language: string | null;
}

function extractCode(prompt: string): Code | null {
  const fenced = /```([\w+#-]*)\n([\s\S]*?)```/.exec(prompt);
  if (fenced) return { text: fenced[2]!, language: fenced[1] || null };
  const lines = prompt.split('\n');
  const codeish = lines.filter((line) =>
    /[;{}()=]|^\s*(def|class|import|from|fn|func|let|const|var|return|if|for|while)\b/.test(line),
  );
  if (lines.length >= 2 && codeish.length >= Math.ceil(lines.length / 2))
    return { text: prompt, language: null };
  return null;
}

function guessLanguage(code: Code): string {
  if (code.language) return code.language;
  const t = code.text;
  if (/^\s*(def |from \w+ import|import \w+$)/m.test(t) || /:\s*$/m.test(t)) return 'python';
  if (/\bfn \w+\(|\blet mut\b|::/.test(t)) return 'rust';
  if (/\bfunc \w+\(|\bpackage \w+/.test(t)) return 'go';
  if (/:\s*(string|number|boolean)\b|\binterface \w+|\btype \w+ =/.test(t)) return 'typescript';
  if (/\b(function|const|let|=>)\b/.test(t)) return 'javascript';
  if (/#include|std::/.test(t)) return 'c++';
  if (/\bpublic (static )?(class|void)\b/.test(t)) return 'java';
  return 'code';
}

function explain(code: Code): string {
  const language = guessLanguage(code);
  const lines = code.text.split('\n').filter((line) => line.trim()).length;
  const names = new Set<string>();
  const definition =
    /\b(?:function|def|fn|func|class|interface|struct|type)\s+([A-Za-z_]\w*)|\b(?:const|let|var)\s+([A-Za-z_]\w*)\s*=\s*(?:async\s*)?\(/g;
  for (const match of code.text.matchAll(definition)) {
    names.add(match[1] ?? match[2]!);
    if (names.size === 8) break;
  }
  const imports = [
    ...code.text.matchAll(/^\s*(?:import|from|use|#include|require\()\s*([^\s;]+)/gm),
  ]
    .map((m) => m[1]!)
    .slice(0, 6);
  const branches = (code.text.match(/\b(if|else if|elif|switch|match|case)\b/g) ?? []).length;
  const loops = (code.text.match(/\b(for|while|loop|forEach|map)\b/g) ?? []).length;
  const returns = (code.text.match(/\breturn\b/g) ?? []).length;
  const parts = [
    `Here is an outline of this ${language} snippet (${lines} non-empty line${lines === 1 ? '' : 's'}).`,
    '',
  ];
  if (names.size) parts.push(`- It defines ${[...names].map((n) => `\`${n}\``).join(', ')}.`);
  if (imports.length) parts.push(`- It depends on ${imports.map((n) => `\`${n}\``).join(', ')}.`);
  parts.push(
    `- Control flow: ${branches} branch${branches === 1 ? '' : 'es'}, ${loops} loop${loops === 1 ? '' : 's'} or iteration${loops === 1 ? '' : 's'}, ${returns} return statement${returns === 1 ? '' : 's'}.`,
  );
  if (/\b(async|await|Promise|Future)\b/.test(code.text))
    parts.push('- It is asynchronous: some work completes later, so callers must await it.');
  if (/\b(try|catch|except|Result<|\.unwrap\(\))/.test(code.text))
    parts.push('- It handles errors explicitly.');
  parts.push(
    '',
    `${NOTE}, so this is a structural outline rather than a real explanation. Point a tier at a real model in the gateway config for a full answer.`,
  );
  return parts.join('\n');
}

const GENERATE_LANGUAGES: Array<[RegExp, string]> = [
  [/\bpython\b/i, 'python'],
  [/\brust\b/i, 'rust'],
  [/\bgo(lang)?\b/i, 'go'],
  [/\bjavascript\b|\bjs\b|\bnode\b/i, 'javascript'],
];

function generate(prompt: string): string {
  const language =
    GENERATE_LANGUAGES.find(([pattern]) => pattern.test(prompt))?.[1] ?? 'typescript';
  const subject =
    /\b(?:function|code|class|script|program|method)\s+(?:that|to|which|for)\s+([^.?!\n]{3,80})/i.exec(
      prompt,
    )?.[1] ??
    /\b(?:generate|write|create|implement|make)\s+(?:a|an|the)?\s*([^.?!\n]{3,80})/i.exec(
      prompt,
    )?.[1] ??
    'do the task';
  const words = subject
    .toLowerCase()
    .match(/[a-z0-9]+/g)
    ?.filter((w) => !['a', 'an', 'the', 'in', 'of', 'function', 'code'].includes(w))
    .slice(0, 4) ?? ['task'];
  const camel =
    words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('') || 'task';
  const snake = words.join('_') || 'task';
  const summary = subject.trim();
  const skeletons: Record<string, string> = {
    typescript: `/** ${summary} */\nexport function ${camel}(input: string): string {\n  if (input.length === 0) throw new Error('input must not be empty');\n  // The offline engine writes the shape; fill in the logic.\n  return input;\n}`,
    javascript: `/** ${summary} */\nexport function ${camel}(input) {\n  if (!input) throw new Error('input must not be empty');\n  // The offline engine writes the shape; fill in the logic.\n  return input;\n}`,
    python: `def ${snake}(value: str) -> str:\n    """${summary}"""\n    if not value:\n        raise ValueError("value must not be empty")\n    # The offline engine writes the shape; fill in the logic.\n    return value`,
    rust: `/// ${summary}\npub fn ${snake}(input: &str) -> Result<String, String> {\n    if input.is_empty() {\n        return Err("input must not be empty".into());\n    }\n    // The offline engine writes the shape; fill in the logic.\n    Ok(input.to_string())\n}`,
    go: `// ${camel} will ${summary}.\nfunc ${camel}(input string) (string, error) {\n\tif input == "" {\n\t\treturn "", errors.New("input must not be empty")\n\t}\n\t// The offline engine writes the shape; fill in the logic.\n\treturn input, nil\n}`,
  };
  return [
    `Here is a ${language} starting point for: ${summary}.`,
    '',
    `\`\`\`${language}`,
    skeletons[language],
    '```',
    '',
    `${NOTE}, so this is a skeleton with input checking, not a finished implementation. Point a tier at a real model in the gateway config for complete code.`,
  ].join('\n');
}

function chat(prompt: string, turns: number): string {
  if (!prompt)
    return `Hello! ${NOTE}. Ask me to explain a piece of code or to generate a function, and I will give you a structural outline or a skeleton.`;
  const quoted = prompt.length > 160 ? `${prompt.slice(0, 157)}...` : prompt;
  const greeting = /^(hi|hello|hey|namaste)\b/i.test(prompt) ? 'Hello! ' : '';
  return [
    `${greeting}${NOTE}, so I cannot reason about "${quoted}" the way a real model would.`,
    '',
    'What I can do offline:',
    '- **Explain** code: send a snippet with "explain" and I outline its structure.',
    '- **Generate** code: ask me to "write a function that ..." and I return a skeleton.',
    '',
    `This conversation has ${turns} message${turns === 1 ? '' : 's'} so far. To get real answers, add an upstream (OpenAI, Ollama or any OpenAI-compatible server) to the gateway config; billing, streaming and the API stay the same.`,
  ].join('\n');
}
