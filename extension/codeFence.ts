// Takes the code out of a generated reply, also while the reply is still streaming: when the reply
// has a fenced code block, the code is the first block's content (prose around it is dropped);
// otherwise the code is the whole reply. Pure, unit-tested.
//
// Streaming cannot know in advance whether a fence will come, so text is emitted as it arrives and
// a step may say `reset`: "discard what was emitted so far" (prose that turned out to precede a
// fence). Applying the steps in order always yields stripCodeFences(whole reply).

export interface StripStep {
  reset: boolean;
  text: string;
}

const OPENER = /^ {0,3}(`{3,}|~{3,})[^`]*$/;

export class FenceStripper {
  private state: 'start' | 'plain' | 'fenced' | 'done' = 'start';
  private buffer = '';
  private fence = '';
  /** fenced: some content was emitted, so the next line needs a newline before it. */
  private started = false;
  /** The beginning of the current line was already emitted (so it is not a fence line). */
  private lineOpen = false;

  push(chunk: string): StripStep {
    this.buffer += chunk;
    return this.process(false);
  }

  end(): StripStep {
    const step = this.process(true);
    this.state = 'done';
    this.buffer = '';
    return step;
  }

  private process(final: boolean): StripStep {
    const step: StripStep = { reset: false, text: '' };
    if (this.state === 'start') this.decide(final, step);
    if (this.state === 'plain') this.drainPlain(final, step);
    if (this.state === 'fenced') this.drainFenced(final, step);
    if (this.state === 'done') this.buffer = '';
    return step;
  }

  private decide(final: boolean, step: StripStep): void {
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      const line = newline < 0 ? this.buffer : this.buffer.slice(0, newline);
      if (newline >= 0 && line.trim() === '') {
        this.buffer = this.buffer.slice(newline + 1);
        continue;
      }
      if (newline < 0 && !final && (line.trim() === '' || mayBecomeOpener(line))) return;
      if (newline < 0 && line.trim() === '') {
        this.buffer = '';
        return;
      }
      if (this.openFence(line, newline < 0 ? '' : this.buffer.slice(newline + 1), step)) return;
      this.state = 'plain';
      return;
    }
  }

  private drainPlain(final: boolean, step: StripStep): void {
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      if (newline < 0) break;
      const line = this.buffer.slice(0, newline);
      const rest = this.buffer.slice(newline + 1);
      if (!this.lineOpen && this.openFence(line, rest, step)) return;
      step.text += `${line}\n`;
      this.buffer = rest;
      this.lineOpen = false;
    }
    if (this.buffer === '') return;
    if (final || this.lineOpen || !mayBecomeOpener(this.buffer)) {
      if (final && !this.lineOpen && this.openFence(this.buffer, '', step)) return;
      step.text += this.buffer;
      this.buffer = '';
      this.lineOpen = true;
    }
  }

  /** If `line` opens a fence: switch to fenced mode, discard what was emitted, continue with `rest`. */
  private openFence(line: string, rest: string, step: StripStep): boolean {
    const opener = OPENER.exec(line.replace(/\r$/, ''));
    if (!opener) return false;
    step.reset = true;
    step.text = '';
    this.state = 'fenced';
    this.fence = opener[1]!;
    this.buffer = rest;
    this.started = false;
    this.lineOpen = false;
    return true;
  }

  private drainFenced(final: boolean, step: StripStep): void {
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      if (newline < 0) break;
      const line = this.buffer.slice(0, newline).replace(/\r$/, '');
      this.buffer = this.buffer.slice(newline + 1);
      if (!this.lineOpen && this.isCloser(line)) {
        this.state = 'done';
        return;
      }
      step.text += this.emitLinePart(line);
      this.lineOpen = false;
    }
    if (this.buffer === '') return;
    if (final) {
      const last = this.buffer.replace(/\r$/, '');
      if (this.lineOpen || !this.isCloser(last)) step.text += this.emitLinePart(last);
      this.buffer = '';
      return;
    }
    if (this.lineOpen || !this.mayBecomeCloser(this.buffer)) {
      // A trailing "\r" may be the first half of a CRLF line break: keep it back.
      const held = this.buffer.endsWith('\r') ? '\r' : '';
      const part = this.buffer.slice(0, this.buffer.length - held.length);
      if (part !== '') {
        step.text += this.emitLinePart(part);
        this.lineOpen = true;
      }
      this.buffer = held;
    }
  }

  private emitLinePart(text: string): string {
    const prefix = this.lineOpen || !this.started ? '' : '\n';
    this.started = true;
    return prefix + text;
  }

  private isCloser(line: string): boolean {
    const match = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
    return (
      match !== null && match[1]![0] === this.fence[0] && match[1]!.length >= this.fence.length
    );
  }

  private mayBecomeCloser(partial: string): boolean {
    const char = this.fence[0] === '`' ? '`' : '~';
    return new RegExp(`^ {0,3}\\${char}*\\s*$`).test(partial);
  }
}

function mayBecomeOpener(partial: string): boolean {
  return /^ {0,3}([`~]+[^`]*)?$/.test(partial);
}

/** Applies streamed steps to the text emitted so far. */
export function applyStep(emitted: string, step: StripStep): string {
  return (step.reset ? '' : emitted) + step.text;
}

export function stripCodeFences(text: string): string {
  const stripper = new FenceStripper();
  return applyStep(applyStep('', stripper.push(text)), stripper.end());
}

/** Wraps code in a fence longer than any backtick run inside it, so the code cannot close it early. */
export function fenced(code: string, language: string): string {
  const longest = Math.max(0, ...[...code.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${language}\n${code.replace(/\n$/, '')}\n${fence}`;
}

/** Fence tags that are not VS Code language ids themselves. */
const FENCE_ALIASES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescriptreact',
  js: 'javascript',
  jsx: 'javascriptreact',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  python3: 'python',
  rb: 'ruby',
  rs: 'rust',
  golang: 'go',
  kt: 'kotlin',
  kts: 'kotlin',
  cs: 'csharp',
  'c#': 'csharp',
  'c++': 'cpp',
  cc: 'cpp',
  hpp: 'cpp',
  h: 'c',
  sh: 'shellscript',
  bash: 'shellscript',
  zsh: 'shellscript',
  shell: 'shellscript',
  console: 'shellscript',
  ps1: 'powershell',
  pwsh: 'powershell',
  yml: 'yaml',
  md: 'markdown',
  jsonc: 'jsonc',
  dockerfile: 'dockerfile',
  docker: 'dockerfile',
  text: 'plaintext',
  txt: 'plaintext',
  plain: 'plaintext',
  objc: 'objective-c',
  'objective-c': 'objective-c',
};

/** The VS Code language id for a code fence's tag, among the `known` ones; plain text when there is none. */
export function languageIdForFence(tag: string | undefined, known: ReadonlySet<string>): string {
  const name = (tag ?? '').trim().toLowerCase();
  if (!name) return 'plaintext';
  const id = FENCE_ALIASES[name] ?? name;
  return known.has(id) ? id : 'plaintext';
}
