// Fair shares of the server's execution slots. Operations (a REST route's or a /graphql request's execution, once
// its body has arrived) run at most MAX_CONCURRENT_OPERATIONS at a time; past that they wait in one queue per
// client (the key, and the user a super-user key acts as), and a slot that frees goes to the next client in turn.
// A client that keeps 32 connections busy therefore waits behind its own requests, not in front of everyone
// else's: another client's request waits for one slot at most, instead of behind the whole backlog on the event
// loop. Below the limit nothing waits, so an unloaded server behaves exactly as without it.
//
// The embedded database answers in-process: an operation's awaits settle as microtasks, so an operation runs whole
// inside the callback that admitted it, and every request read in one pass of the event loop would run back to back
// in socket order before anything else is looked at. There the shares run `serial`: every operation waits in its
// queue and one is admitted per turn of the event loop (setImmediate), so the requests that arrived meanwhile are
// queued first and the next turn goes to the next client in order, not to whoever's socket was read first. (An
// operation that does wait for real I/O, a file being stored, lets the next turns admit others, up to the limit.)
import type { Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';

interface Waiter { grant(release: () => void): void }

export class FairShare {
  private running = 0;
  /** Clients with waiting operations, in turn order (a Map keeps insertion order). */
  private readonly waiting = new Map<string, Waiter[]>();
  private queuedCount = 0;

  private grantQueued = false;

  /** `limit` 0 turns the shares off: every operation runs at once. `serial`: see above. */
  constructor(readonly limit: number, private readonly options: { serial?: boolean } = {}) {}

  /** Operations running now. */
  get inFlight(): number { return this.running; }
  /** Operations waiting for a slot. */
  get queued(): number { return this.queuedCount; }

  /**
   * Resolves with the slot's release (call it once the operation is over; later calls do nothing) when `client`'s
   * turn comes. Rejects with the signal's reason if it aborts first (the deadline, or the client went away).
   */
  acquire(client: string, signal?: AbortSignal): Promise<() => void> {
    if (this.limit === 0) return Promise.resolve(() => {});
    if (signal?.aborted) return Promise.reject(signal.reason ?? new ApiError('operation_timeout', 'The request was cancelled.'));
    if (this.running < this.limit && !this.options.serial) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const queue = this.waiting.get(client);
        const i = queue?.indexOf(waiter) ?? -1;
        if (i >= 0) {
          queue!.splice(i, 1);
          this.queuedCount--;
          if (queue!.length === 0) this.waiting.delete(client);
        }
        reject(signal!.reason);
      };
      const waiter: Waiter = { grant: (release) => { signal?.removeEventListener('abort', onAbort); resolve(release); } };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.waiting.get(client);
      if (queue) queue.push(waiter);
      else this.waiting.set(client, [waiter]);
      this.queuedCount++;
      if (this.options.serial) this.grantNextTurn();
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      if (this.options.serial) this.grantNextTurn();
      else this.next();
    };
  }

  /** Serial: admits the next waiting operation from a later turn of the event loop, one per turn. */
  private grantNextTurn(): void {
    if (this.grantQueued || this.running >= this.limit || this.queuedCount === 0) return;
    this.grantQueued = true;
    setImmediate(() => {
      this.grantQueued = false;
      this.next();
      this.grantNextTurn();
    });
  }

  /** Hands a free slot to the first waiting client in turn, which then goes to the back of the turn order. */
  private next(): void {
    if (this.running >= this.limit) return;
    const first = this.waiting.entries().next();
    if (first.done) return;
    const [client, queue] = first.value;
    const waiter = queue.shift()!;
    this.queuedCount--;
    this.waiting.delete(client);
    if (queue.length > 0) this.waiting.set(client, queue);
    this.running++;
    waiter.grant(this.releaser());
  }
}

/** Whose share an operation counts against: the key, and the user a super-user key acts as. */
export function clientOf(context: unknown): string {
  const visitor = (context as { visitor?: { apiKeyId: number; userId: number } } | undefined)?.visitor;
  return visitor ? `${visitor.apiKeyId}:${visitor.userId}` : 'anonymous';
}

/**
 * /graphql executions take their slot here. Registered before operationLimitsPlugin, whose execution deadline then
 * covers the wait: an operation still waiting at the deadline answers 503 operation_timeout like a slow one.
 */
export function fairSharePlugin(share: FairShare): Plugin {
  return {
    onExecute({ executeFn, setExecuteFn }) {
      if (share.limit === 0) return;
      setExecuteFn(async (args) => {
        const release = await share.acquire(clientOf(args.contextValue), (args as { signal?: AbortSignal }).signal);
        try {
          return await executeFn(args);
        } finally {
          release();
        }
      });
    },
  };
}
