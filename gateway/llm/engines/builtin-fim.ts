// Fill-in-the-middle for the built-in engine: the completions protocol sends a FIM prompt
// (FIM_PREFIX prefix FIM_SUFFIX suffix FIM_MIDDLE) and this writes a sensible middle for
// code without a model: it completes the current line (closing what the line opened, with
// a semicolon where the file uses them) and closes the brackets still open that the suffix
// does not close, each on its own line at the indentation of the line that opened it.
export const FIM_PREFIX = '<|fim_prefix|>';
export const FIM_SUFFIX = '<|fim_suffix|>';
export const FIM_MIDDLE = '<|fim_middle|>';

const CLOSER: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** The prefix and suffix of a FIM prompt, or null when the text is not one. */
export function parseFim(text: string): { prefix: string; suffix: string } | null {
  if (!text.startsWith(FIM_PREFIX) || !text.endsWith(FIM_MIDDLE)) return null;
  const body = text.slice(FIM_PREFIX.length, -FIM_MIDDLE.length);
  const at = body.lastIndexOf(FIM_SUFFIX);
  if (at < 0) return null;
  return { prefix: body.slice(0, at), suffix: body.slice(at + FIM_SUFFIX.length) };
}

interface Opener {
  char: string;
  line: number;
  indent: string;
}

/** The brackets the prefix leaves open, skipping string literals and line comments. */
function openers(prefix: string): Opener[] {
  const stack: Opener[] = [];
  const lines = prefix.split('\n');
  lines.forEach((line, number) => {
    const indent = /^\s*/.exec(line)![0];
    let quote: string | null = null;
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (quote) {
        if (c === '\\') i++;
        else if (c === quote) quote = null;
        continue;
      }
      if (c === '"' || c === "'" || c === '`') quote = c;
      else if ((c === '/' && line[i + 1] === '/') || c === '#') break;
      else if (c in CLOSER) stack.push({ char: c, line: number, indent });
      else if (c === ')' || c === ']' || c === '}') {
        if (stack.length && CLOSER[stack.at(-1)!.char] === c) stack.pop();
      }
    }
  });
  return stack;
}

export function fillMiddle(prefix: string, suffix: string): string {
  const stack = openers(prefix);
  // Closers the suffix already begins with are not written again.
  for (const c of /^[\s)\]}]*/.exec(suffix)![0].replace(/\s/g, '')) {
    if (stack.length && CLOSER[stack.at(-1)!.char] === c) stack.pop();
    else break;
  }
  const lines = prefix.split('\n');
  const current_line = lines.length - 1;
  const current = lines[current_line]!;
  const semicolons =
    /;\s*$/m.test(prefix) && !/^\s*(def|class|if|for|while|elif|else)\b.*:\s*$/m.test(prefix);
  let middle = '';
  // The current line: close what it opened, then end the statement.
  while (stack.length && stack.at(-1)!.line === current_line && stack.at(-1)!.char !== '{')
    middle += CLOSER[stack.pop()!.char];
  const open_block =
    stack.length > 0 && stack.at(-1)!.line === current_line && stack.at(-1)!.char === '{';
  const line_text = (current + middle).trim();
  if (open_block) {
    const indent = stack.at(-1)!.indent;
    middle += `\n${indent}  \n${indent}}`;
    stack.pop();
  } else if (
    line_text &&
    semicolons &&
    !/[;{}:,]$/.test(line_text) &&
    !suffix.trimStart().startsWith(';')
  ) {
    middle += ';';
  }
  // Blocks opened on earlier lines and not closed by the suffix.
  while (stack.length) {
    const opener = stack.pop()!;
    middle += `\n${opener.indent}${CLOSER[opener.char]}`;
    if (opener.char !== '{' && semicolons && stack.length === 0) middle += ';';
  }
  return middle;
}
