// The prompts AIHub sends for Explain Selection and Generate Code. Pure, unit-tested.
import { fenced } from './codeFence.js';

export const CHAT_SYSTEM_PROMPT =
  'You are AIHub, a coding assistant inside VS Code. Answer concisely in Markdown; put code in fenced code blocks with a language.';

export function explainPrompt(code: string, language: string, fileName: string, firstLine: number, lastLine: number): string {
  return `Explain this ${language} code from \`${fileName}\` (lines ${firstLine}-${lastLine}):\n\n${fenced(code, language)}`;
}

const STARTS_WITH_VERB = /^(write|generate|create|implement|make|build|scaffold)\b/i;
const STARTS_WITH_THING = /^(a|an|the|some|one|two|function|class|method|script|program|test|tests|component|module|type|interface|struct|enum|regex|query)\b/i;

/** Turns "a function that …" or "sort the list" into an explicit request to write code. */
export function generationRequest(description: string): string {
  const text = description.trim().replace(/[.\s]+$/, '');
  if (STARTS_WITH_VERB.test(text)) return `${text}.`;
  if (STARTS_WITH_THING.test(text)) return `Write ${text}.`;
  return `Write code to ${text.charAt(0).toLowerCase()}${text.slice(1)}.`;
}

export function generateMessages(
  description: string,
  language: string,
  fileName: string,
  selectedCode: string,
): Array<{ role: 'system' | 'user'; content: string }> {
  const system =
    `You write ${language} code for ${fileName}. Reply with the code only: no explanation, no Markdown code fences. ` +
    'The reply is inserted into the editor as it is.';
  const request = `${generationRequest(description)}\nLanguage: ${language}.`;
  const user = selectedCode
    ? `${request}\nRewrite this selected code; your reply replaces it:\n${fenced(selectedCode, language)}`
    : request;
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}
