// An operation's abort signal: what the deadline (src/graphql/limits.ts) gives the executors, the fair share and the
// pool's statements, which read `aborted` and `reason`, call `throwIfAborted()`, and listen for 'abort'. Node's
// AbortController costs about 2.5 µs to make and about 1 µs per listener added and removed (an EventTarget with its
// own maps and event objects), several times per request; this one is a plain object with a list of listeners. It is
// not an AbortSignal: code that needs a real one (fetch, streams, timers) takes the request's own signal, never this.

/** The part of AbortSignal an operation's code uses; a real AbortSignal has it too. */
export interface OperationSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: 'abort', listener: (event: Event) => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: (event: Event) => void): void;
}

type Listener = (event: Event) => void;

export class OperationAbort implements OperationSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Listener[] | undefined = undefined;

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** As EventTarget: a listener added twice is called once; one added after the abort is never called. */
  addEventListener(_type: 'abort', listener: Listener): void {
    if (this.aborted) return;
    if (!this.listeners) this.listeners = [listener];
    else if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: Listener): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const i = listeners.indexOf(listener);
    if (i !== -1) listeners.splice(i, 1);
  }

  /**
   * Aborts with `reason` (the first abort wins) and calls each listener once, in the order they were added. As with
   * EventTarget, a listener that throws does not stop the others: its error is thrown again on its own, uncaught.
   */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    const event = new Event('abort');
    for (const listener of listeners) {
      try {
        listener.call(this, event);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
