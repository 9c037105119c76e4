// The prompts AIHub sends for Explain Selection and Generate Code. Pure, unit-tested.
import { fenced } from './codeFence.js';

export const CHAT_SYSTEM_PROMPT =
  'You are AIHub, a coding assistant inside VS Code. Answer concisely in Markdown; put code in fenced code blocks with a language.';

/** The function or class around an explained selection. */
export interface Enclosing {
  /** e.g. "function `add`". */
  label: string;
  code: string;
  firstLine: number;
  lastLine: number;
}

export function explainPrompt(
  code: string,
  language: string,
  fileName: string,
  firstLine: number,
  lastLine: number,
  enclosing?: Enclosing,
): string {
  const ask = `Explain this ${language} code from \`${fileName}\` (lines ${firstLine}-${lastLine}):\n\n${fenced(code, language)}`;
  if (!enclosing) return ask;
  return `${ask}\n\nIt is part of ${enclosing.label} (lines ${enclosing.firstLine}-${enclosing.lastLine}), shown for context:\n\n${fenced(enclosing.code, language)}`;
}

const STARTS_WITH_VERB = /^(write|generate|create|implement|make|build|scaffold)\b/i;
const STARTS_WITH_THING =
  /^(a|an|the|some|one|two|function|class|method|script|program|test|tests|component|module|type|interface|struct|enum|regex|query)\b/i;

/** Turns "a function that …" or "sort the list" into an explicit request to write code. */
export function generationRequest(description: string): string {
  const text = description.trim().replace(/[.\s]+$/, '');
  if (STARTS_WITH_VERB.test(text)) return `${text}.`;
  if (STARTS_WITH_THING.test(text)) return `Write ${text}.`;
  return `Write code to ${text.charAt(0).toLowerCase()}${text.slice(1)}.`;
}

/** The code around the cursor that Generate Code sends (each part already bounded by the caller). */
export interface Surroundings {
  imports: string;
  before: string;
  after: string;
}

export function generateMessages(
  description: string,
  language: string,
  fileName: string,
  selectedCode: string,
  surroundings?: Surroundings,
): Array<{ role: 'system' | 'user'; content: string }> {
  const system =
    `You write ${language} code for ${fileName}. Reply with the code only: no explanation, no Markdown code fences. ` +
    'The reply is inserted into the editor as it is. Use the names, imports and style of the surrounding code; do not repeat the code before or after the insertion point.';
  const request = `${generationRequest(description)}\nLanguage: ${language}.`;
  const parts: string[] = [];
  if (surroundings?.imports)
    parts.push(`The file's imports:\n${fenced(surroundings.imports, language)}`);
  if (surroundings?.before)
    parts.push(`Code before the insertion point:\n${fenced(surroundings.before, language)}`);
  if (surroundings?.after)
    parts.push(`Code after the insertion point:\n${fenced(surroundings.after, language)}`);
  const around = parts.length ? `\n\n${parts.join('\n\n')}\n\n` : '\n';
  const user = selectedCode
    ? `${request}${around}Rewrite this selected code; your reply replaces it:\n${fenced(selectedCode, language)}`
    : `${request}${parts.length ? `${around}Your reply goes between the code before and the code after.` : ''}`;
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}
