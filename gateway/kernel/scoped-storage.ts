// An AsyncLocalStorage that is switched on only while a run of it is open. On Node 20 an
// enabled AsyncLocalStorage turns on async hooks for the whole process: from then on every
// promise and every nextTick of every request pays an init hook, whether or not it ever reads
// the storage (a billed chat cost 1.15 x the gateway's CPU with one enabled: docs/benchmarks.md,
// "The request scope without AsyncLocalStorage"). Disabled whenever no run is open, the hooks
// are off again; a continuation that outlives every run reads undefined (callers treat that as
// "not known", never as a value).
import { AsyncLocalStorage } from 'node:async_hooks';

export class ScopedStorage<T> {
  private readonly storage = new AsyncLocalStorage<T>();
  private open = 0;

  /**
   * Runs `fn` with `value` implicit in its async continuations. The run stays open until
   * `until` calls the function it is given (a response's close, say); without `until`, until
   * `fn`'s promise settles, or at once when `fn` returns no promise.
   */
  run<R>(value: T, fn: () => R, until?: (leave: () => void) => void): R {
    this.open++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--this.open === 0) this.storage.disable();
    };
    until?.(leave);
    let result: R;
    try {
      result = this.storage.run(value, fn);
    } catch (error) {
      leave();
      throw error;
    }
    if (!until) {
      if (result instanceof Promise) result.then(leave, leave);
      else leave();
    }
    return result;
  }

  /** The value of the run whose continuation this is; undefined outside every run (or once all have ended). */
  get(): T | undefined {
    return this.open > 0 ? this.storage.getStore() : undefined;
  }

  /** Runs `fn` outside any run of this storage. */
  exit(fn: () => void): void {
    if (this.open === 0) return fn();
    this.storage.exit(fn);
    // (exit switches the storage back on after fn: off again if fn ended the last open run.)
    if (this.open === 0) this.storage.disable();
  }

  /** Runs open now (tests). */
  get opened(): number {
    return this.open;
  }
}
