// How a chat request tells its upstream call that the client went away. A standard
// AbortController costs about 5 µs per request to make and to listen on (EventTarget
// machinery); this one costs nothing until it is used. Anything with `aborted` and
// add/removeEventListener('abort') is a CancelSignal, so an AbortSignal is one too.

export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancel implements CancelSignal {
  aborted = false;
  private listeners: (() => void)[] | null = null;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners) for (const listener of listeners) listener();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index !== -1) this.listeners!.splice(index, 1);
  }
}

/** A standard AbortSignal that follows `signal` (for APIs that take only those, like fetch). */
export function toAbortSignal(signal: CancelSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', () => controller.abort(), { once: true });
  return controller.signal;
}
