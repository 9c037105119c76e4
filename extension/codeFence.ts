// Strips a Markdown code fence around generated code, also while the code is still streaming.
// A reply whose first non-blank line opens a fence yields only the fenced lines (what follows the
// closing fence is dropped); any other reply passes through unchanged. Pure, unit-tested.

const OPENER = /^ {0,3}(`{3,}|~{3,})[^`]*$/;

export class FenceStripper {
  private state: 'start' | 'fenced' | 'plain' | 'done' = 'start';
  private buffer = '';
  private fence = '';
  private started = false;
  private lineOpen = false;

  push(chunk: string): string {
    this.buffer += chunk;
    if (this.state === 'start') return this.decide(false);
    if (this.state === 'fenced') return this.drainFenced(false);
    if (this.state === 'plain') return this.take();
    this.buffer = '';
    return '';
  }

  end(): string {
    let out = '';
    if (this.state === 'start') out += this.decide(true);
    if (this.state === 'fenced') out += this.drainFenced(true);
    if (this.state === 'plain') out += this.take();
    this.state = 'done';
    this.buffer = '';
    return out;
  }

  private decide(final: boolean): string {
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      if (newline < 0) {
        if (final && this.buffer.trim() !== '') return this.classifyFirstLine(this.buffer, '', true);
        if (final) {
          this.buffer = '';
          return '';
        }
        const mayBeFence = /^ {0,3}([`~]+[^`]*)?$/.test(this.buffer) || this.buffer.trim() === '';
        if (mayBeFence) return '';
        this.state = 'plain';
        return this.take();
      }
      const line = this.buffer.slice(0, newline);
      if (line.trim() === '') {
        this.buffer = this.buffer.slice(newline + 1);
        continue;
      }
      return this.classifyFirstLine(line, this.buffer.slice(newline + 1), final);
    }
  }

  private classifyFirstLine(line: string, rest: string, final: boolean): string {
    const opener = OPENER.exec(line.replace(/\r$/, ''));
    if (opener) {
      this.state = 'fenced';
      this.fence = opener[1]!;
      this.buffer = rest;
      return this.drainFenced(final);
    }
    this.state = 'plain';
    return this.take();
  }

  private drainFenced(final: boolean): string {
    let out = '';
    for (;;) {
      const newline = this.buffer.indexOf('\n');
      if (newline < 0) break;
      const line = this.buffer.slice(0, newline).replace(/\r$/, '');
      this.buffer = this.buffer.slice(newline + 1);
      if (!this.lineOpen && this.isCloser(line)) {
        this.state = 'done';
        this.buffer = '';
        return out;
      }
      out += this.emitPart(line);
      this.lineOpen = false;
    }
    if (this.buffer === '') return out;
    if (final) {
      const last = this.buffer.replace(/\r$/, '');
      if (!(this.lineOpen === false && this.isCloser(last))) out += this.emitPart(last);
      this.buffer = '';
      return out;
    }
    if (this.lineOpen || !this.mayBecomeCloser(this.buffer)) {
      // A trailing "\r" may be the first half of a CRLF line break: keep it back.
      const held = this.buffer.endsWith('\r') ? '\r' : '';
      const part = this.buffer.slice(0, this.buffer.length - held.length);
      if (part !== '') {
        out += this.emitPart(part);
        this.lineOpen = true;
      }
      this.buffer = held;
    }
    return out;
  }

  private emitPart(text: string): string {
    const prefix = this.lineOpen || !this.started ? '' : '\n';
    this.started = true;
    return prefix + text;
  }

  private isCloser(line: string): boolean {
    const trimmed = line.replace(/\r$/, '');
    const match = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(trimmed);
    return match !== null && match[1]![0] === this.fence[0] && match[1]!.length >= this.fence.length;
  }

  private mayBecomeCloser(partial: string): boolean {
    const char = this.fence[0] === '`' ? '`' : '~';
    return new RegExp(`^ {0,3}\\${char}*\\s*$`).test(partial);
  }

  private take(): string {
    const out = this.buffer;
    this.buffer = '';
    return out;
  }
}

export function stripCodeFences(text: string): string {
  const stripper = new FenceStripper();
  return stripper.push(text) + stripper.end();
}

/** Wraps code in a fence longer than any backtick run inside it, so the code cannot close it early. */
export function fenced(code: string, language: string): string {
  const longest = Math.max(0, ...[...code.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${language}\n${code.replace(/\n$/, '')}\n${fence}`;
}
