// The built-in offline engine: deterministic, no network, no model weights. It answers the
// three things the editor extension asks for (chat, explain this code, generate code) well
// enough for a demo, says plainly that it is the offline engine, and streams token by token
// with exact usage, so every path of the gateway (billing included) works on a fresh clone.
import { setTimeout as sleep } from 'node:timers/promises';
import { decode, encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { z } from 'zod';
import type { ChatMessage } from '../messages.js';
import { countPromptTokens, countTextTokens } from '../tokens.js';
import { embedText } from './builtin-embed.js';
import { fillMiddle, parseFim } from './builtin-fim.js';
import { UpstreamError, type EmbedRequest, type Engine, type EngineRequest, type UpstreamChunk, type UpstreamCompletion, type UpstreamEmbeddings } from '../types.js';

const ENCODE_OPTIONS = { disallowedSpecial: new Set<string>() };
const NOTE = "I'm AIHub's built-in offline engine: I run inside the gateway without a network or a language model";

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
    const { pieces, completion_tokens, finish_reason } = plan(request);
    return {
      choices: [{ index: 0, message: { role: 'assistant', content: pieces.join('') }, finish_reason }],
      usage: { prompt_tokens: countPromptTokens(request.messages, request.params.tools), completion_tokens },
    };
  }

  async *stream(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    const { pieces, completion_tokens, finish_reason } = plan(request);
    yield { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
    for (const piece of pieces) {
      if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
      if (this.config.token_interval_ms > 0) await sleep(this.config.token_interval_ms);
      yield { choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] };
    }
    yield { choices: [{ index: 0, delta: {}, finish_reason }] };
    yield { choices: [], usage: { prompt_tokens: countPromptTokens(request.messages, request.params.tools), completion_tokens } };
  }

  async embed(request: EmbedRequest): Promise<UpstreamEmbeddings> {
    return {
      data: request.input.map((text, index) => ({ index, embedding: embedText(text, request.dimensions ?? undefined) })),
      usage: { prompt_tokens: request.input.reduce((sum, text) => sum + countTextTokens(text), 0) },
    };
  }

  async close(): Promise<void> {}
}

interface Plan {
  /** One piece per token, except that a character spanning tokens is sent whole. */
  pieces: string[];
  completion_tokens: number;
  finish_reason: 'stop' | 'length';
}

/** The answer cut into real tokens, capped by the output limit and by `stop`. */
function plan(request: EngineRequest): Plan {
  let text = answer(request.messages);
  const stops = request.params.stop;
  for (const stop of typeof stops === 'string' ? [stops] : Array.isArray(stops) ? (stops as string[]) : []) {
    const at = stop ? text.indexOf(stop) : -1;
    if (at >= 0) text = text.slice(0, at);
  }
  const tokens = encode(text, ENCODE_OPTIONS);
  const completion_tokens = Math.min(tokens.length, request.max_output_tokens);
  const pieces: string[] = [];
  let pending: number[] = [];
  for (let i = 0; i < completion_tokens; i++) {
    pending.push(tokens[i]!);
    const piece = decode(pending);
    if (piece.endsWith('\uFFFD') && pending.length < 4 && i + 1 < completion_tokens) continue;
    pieces.push(piece);
    pending = [];
  }
  return { pieces, completion_tokens, finish_reason: completion_tokens < tokens.length ? 'length' : 'stop' };
}

export function answer(messages: readonly ChatMessage[]): string {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const fim = last ? parseFim(textOf(last.content)) : null;
  if (fim) return fillMiddle(fim.prefix, fim.suffix);
  const prompt = last ? textOf(last.content).trim() : '';
  const code = extractCode(prompt);
  if (/\b(explain|what does|how does|walk me through|describe)\b/i.test(prompt) && code) return explain(code);
  if (/\b(generate|write|create|implement|make|scaffold)\b/i.test(prompt)) return generate(prompt);
  if (code && prompt.length - code.text.length < 40) return explain(code);
  return chat(prompt, messages.length);
}

function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

interface Code {
  text: string;
  language: string | null;
}

function extractCode(prompt: string): Code | null {
  const fenced = /```([\w+#-]*)\n([\s\S]*?)```/.exec(prompt);
  if (fenced) return { text: fenced[2]!, language: fenced[1] || null };
  const lines = prompt.split('\n');
  const codeish = lines.filter((line) => /[;{}()=]|^\s*(def|class|import|from|fn|func|let|const|var|return|if|for|while)\b/.test(line));
  if (lines.length >= 2 && codeish.length >= Math.ceil(lines.length / 2)) return { text: prompt, language: null };
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
  const definition = /\b(?:function|def|fn|func|class|interface|struct|type)\s+([A-Za-z_]\w*)|\b(?:const|let|var)\s+([A-Za-z_]\w*)\s*=\s*(?:async\s*)?\(/g;
  for (const match of code.text.matchAll(definition)) {
    names.add(match[1] ?? match[2]!);
    if (names.size === 8) break;
  }
  const imports = [...code.text.matchAll(/^\s*(?:import|from|use|#include|require\()\s*([^\s;]+)/gm)].map((m) => m[1]!).slice(0, 6);
  const branches = (code.text.match(/\b(if|else if|elif|switch|match|case)\b/g) ?? []).length;
  const loops = (code.text.match(/\b(for|while|loop|forEach|map)\b/g) ?? []).length;
  const returns = (code.text.match(/\breturn\b/g) ?? []).length;
  const parts = [`Here is an outline of this ${language} snippet (${lines} non-empty line${lines === 1 ? '' : 's'}).`, ''];
  if (names.size) parts.push(`- It defines ${[...names].map((n) => `\`${n}\``).join(', ')}.`);
  if (imports.length) parts.push(`- It depends on ${imports.map((n) => `\`${n}\``).join(', ')}.`);
  parts.push(
    `- Control flow: ${branches} branch${branches === 1 ? '' : 'es'}, ${loops} loop${loops === 1 ? '' : 's'} or iteration${loops === 1 ? '' : 's'}, ${returns} return statement${returns === 1 ? '' : 's'}.`,
  );
  if (/\b(async|await|Promise|Future)\b/.test(code.text)) parts.push('- It is asynchronous: some work completes later, so callers must await it.');
  if (/\b(try|catch|except|Result<|\.unwrap\(\))/.test(code.text)) parts.push('- It handles errors explicitly.');
  parts.push('', `${NOTE}, so this is a structural outline rather than a real explanation. Point a tier at a real model in the gateway config for a full answer.`);
  return parts.join('\n');
}

const GENERATE_LANGUAGES: Array<[RegExp, string]> = [
  [/\bpython\b/i, 'python'],
  [/\brust\b/i, 'rust'],
  [/\bgo(lang)?\b/i, 'go'],
  [/\bjavascript\b|\bjs\b|\bnode\b/i, 'javascript'],
];

function generate(prompt: string): string {
  const language = GENERATE_LANGUAGES.find(([pattern]) => pattern.test(prompt))?.[1] ?? 'typescript';
  const subject =
    /\b(?:function|code|class|script|program|method)\s+(?:that|to|which|for)\s+([^.?!\n]{3,80})/i.exec(prompt)?.[1] ??
    /\b(?:generate|write|create|implement|make)\s+(?:a|an|the)?\s*([^.?!\n]{3,80})/i.exec(prompt)?.[1] ??
    'do the task';
  const words = subject.toLowerCase().match(/[a-z0-9]+/g)?.filter((w) => !['a', 'an', 'the', 'in', 'of', 'function', 'code'].includes(w)).slice(0, 4) ?? ['task'];
  const camel = words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('') || 'task';
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
  if (!prompt) return `Hello! ${NOTE}. Ask me to explain a piece of code or to generate a function, and I will give you a structural outline or a skeleton.`;
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
