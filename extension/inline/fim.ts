// Fill-in-the-middle for inline completions, pure and unit-tested: the chat prompt that asks a chat
// model for the code at the cursor (until the gateway serves /v1/completions with `suffix`), and
// the clean-up of whatever a model answers: code fences stripped, an echo of the line before the
// cursor removed, the text cut where it runs into the code after the cursor, and single-line
// mode cut at the first line break.
import { stripCodeFences } from '../codeFence.js';

export type CompletionMode = 'line' | 'block';

export const CURSOR = '<CURSOR>';
/** Bounds of what is sent around the cursor. */
export const MAX_PREFIX_CHARS = 6_000;
export const MAX_SUFFIX_CHARS = 2_000;
/** A block completion stops after this many lines. */
export const MAX_BLOCK_LINES = 40;

export interface FimInput {
  prefix: string;
  suffix: string;
  languageId: string;
  fileName: string;
  mode: CompletionMode;
}

export function fimMessages(input: FimInput): Array<{ role: 'system' | 'user'; content: string }> {
  const scope =
    input.mode === 'line'
      ? 'Complete only the rest of the current line.'
      : 'Complete the code at the cursor: the rest of the current line and, when it is natural, the lines that finish the statement or block (at most a few lines).';
  const system =
    `You are a code completion engine for ${input.languageId}. The user's file is shown with ${CURSOR} where the cursor is. ` +
    `Reply with only the text to insert at ${CURSOR}: no explanation, no Markdown code fences, and do not repeat the code before or after the cursor. ${scope}`;
  const user = `File: ${input.fileName}\n${input.prefix}${CURSOR}${input.suffix}`;
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

/** Stop sequences for the request (the FIM completions API takes them too). */
export function fimStops(mode: CompletionMode): string[] | undefined {
  return mode === 'line' ? ['\n'] : undefined;
}

/** The text to show as ghost text, or '' when the answer has nothing usable. */
export function cleanCompletion(
  raw: string,
  input: Pick<FimInput, 'prefix' | 'suffix' | 'mode'>,
): string {
  let text = raw.includes('```') || raw.includes('~~~') ? stripCodeFences(raw) : raw;
  text = text.replace(/\r\n?/g, '\n').split(CURSOR).join('');

  // A model that echoes the line before the cursor: keep what comes after the echo.
  const currentLine = input.prefix.slice(input.prefix.lastIndexOf('\n') + 1);
  const echoed = currentLine.trimStart();
  if (echoed.length > 0 && text.trimStart().startsWith(echoed)) {
    text = text.trimStart().slice(echoed.length);
  } else if (currentLine.length > 0 && currentLine.trim() === '') {
    // The cursor is already indented: drop the model's copy of that indentation on the first line.
    const lead = /^[ \t]*/.exec(text)![0];
    if (lead.length >= currentLine.length) text = text.slice(currentLine.length);
  }

  // Stop where the completion runs into the code after the cursor.
  const restOfLine = input.suffix
    .slice(0, input.suffix.indexOf('\n') >= 0 ? input.suffix.indexOf('\n') : input.suffix.length)
    .trim();
  // The first non-blank line after the cursor's line: a completion line equal to it (exactly, or
  // trimmed when it is long enough not to be a lone brace) is where the suffix begins again.
  const nextLine = input.suffix
    .split('\n')
    .slice(1)
    .find((l) => l.trim() !== '');
  const lines = text.split('\n');
  if (nextLine !== undefined) {
    for (let i = 1; i < lines.length; i++) {
      const candidate = lines[i]!;
      if (
        candidate === nextLine ||
        (nextLine.trim().length >= 8 && candidate.trim() === nextLine.trim())
      ) {
        lines.length = i;
        break;
      }
    }
  }
  text = lines.join('\n');
  if (restOfLine !== '') {
    const firstLineEnd = text.indexOf('\n') >= 0 ? text.indexOf('\n') : text.length;
    const first = text.slice(0, firstLineEnd);
    for (let k = restOfLine.length; k > 0; k--) {
      if (first.trimEnd().endsWith(restOfLine.slice(0, k))) {
        const cut = first.trimEnd();
        text = cut.slice(0, cut.length - k) + text.slice(firstLineEnd);
        break;
      }
    }
  }

  if (input.mode === 'line') {
    const newline = text.indexOf('\n');
    if (newline >= 0) text = text.slice(0, newline);
  } else {
    text = text.split('\n').slice(0, MAX_BLOCK_LINES).join('\n');
  }
  return text.replace(/\s+$/, '');
}
