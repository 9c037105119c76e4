// Background listeners (a response's 'close' or 'finish', a timer) run outside any request's
// try: an exception thrown there reaches the event loop and ends the process, taking every
// other request with it. The audit listener did so on a deeply nested admin body (issue #13,
// finding 2). Every such listener is wrapped: its failure is reported, never thrown.

/** `fn` as a listener that reports what it throws to `onError` instead of throwing it. */
export function guarded<A extends unknown[]>(
  onError: (error: unknown) => void,
  fn: (...args: A) => void,
): (...args: A) => void {
  return (...args: A) => {
    try {
      fn(...args);
    } catch (error) {
      try {
        onError(error);
      } catch {
        // Reporting failed too (a logger that throws): the listener still must not.
      }
    }
  };
}
