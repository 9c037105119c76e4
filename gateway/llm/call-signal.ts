// What an upstream call is told when its client goes away. An AbortSignal does that, but each
// one is an EventTarget: building it and adding and removing its listeners cost a billed chat
// about 6 µs of CPU (issue #40), on every request, for an event that happens to a few. A call
// takes any `CallSignal` (an AbortSignal is one: tests and the SDK pass theirs); the chat
// pipeline passes a `ClientGone`, a plain object with the same few members.

/** The part of AbortSignal an upstream call uses (undici takes any object with addEventListener). */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A CallSignal raised once, by abort(): every listener then runs once, in the order added. */
export class ClientGone implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.aborted) return; // as an AbortSignal: an event already dispatched is not replayed
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const index = listeners.indexOf(listener);
    if (index !== -1) listeners.splice(index, 1);
  }

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = null;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener.call(this);
      } catch (error) {
        // as an EventTarget reports a listener's error: uncaught, without stopping the others
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
