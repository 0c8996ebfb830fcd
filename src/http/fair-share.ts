// Fair shares of the server's execution slots. Operations (a REST route's or a /graphql request's execution, once
// its body has arrived) run at most MAX_CONCURRENT_OPERATIONS at a time; past that they wait in one queue per
// client (the key, and the user a super-user key acts as), and a slot that frees goes to the next client in turn.
// A client that keeps 32 connections busy therefore waits behind its own requests, not in front of everyone
// else's: another client's request waits for one slot at most, instead of behind the whole backlog on the event
// loop. Below the limit nothing waits, so an unloaded server behaves exactly as without it.
//
// Turns are weighed by time, not counted: each client is charged the execution time of its operations (whole
// milliseconds of service: see `served`, on a shared virtual clock), and a freed slot goes to the waiting client charged least, ties in turn
// order. The time of operations still running counts as it passes, so a client cannot take several slots in a row
// on a charge that its running operations have not paid yet. A client that was idle starts at the clock (the least
// charge among the clients with operations running or waiting), with no credit saved up.
//
// Slots alone do not share the CPU: light operations rarely fill them, and a client sending heavy operations
// (long texts up to the response-size limit, say) would take free slots at once and hold the event loop. So a
// client charged more than BURST_MS ahead of the clock waits its turn even when a slot is free, until the others
// have had their share of time; alone, it is the clock and never waits. Each client thus gets about the same share
// of execution time, not the same number of operations.
//
// The embedded database answers in-process: an operation's awaits settle as microtasks, so an operation runs whole
// inside the callback that admitted it, and every request read in one pass of the event loop would run back to back
// in socket order before anything else is looked at. There the shares run `serial`: every operation waits in its
// queue and one is admitted per turn of the event loop (setImmediate), so the requests that arrived meanwhile are
// queued first and the next turn goes to the next client in order, not to whoever's socket was read first. (An
// operation that does wait for real I/O, a file being stored, lets the next turns admit others, up to the limit.)
import type { Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { RESPONSE_BUDGET, type ResponseBudget } from '../graphql/response-size.js';
import type { ResponseAllowance } from './response-allowance.js';
import { clientOf } from '../graphql/context.js';
import type { OperationSignal } from '../db/operation-signal.js';

/** Ends an operation's turn; `extraMs` adds to its charge what its time alone does not show (see resultCharge). */
export type Release = (extraMs?: number) => void;

interface Waiter {
  grant(release: Release): void;
}

/** How far ahead of the clock (ms of execution) a client may run before it waits for the others' turns. */
export const BURST_MS = 25;

export class FairShare {
  private running = 0;
  /** Clients with waiting operations, in turn order (a Map keeps insertion order). */
  private readonly waiting = new Map<string, Waiter[]>();
  private queuedCount = 0;

  private grantQueued = false;
  /** Milliseconds of execution charged to each client, on the virtual clock; a client not here is at the clock. */
  private readonly charged = new Map<string, number>();
  /** Per client with operations running: how many, and the sum of their start times (their elapsed time is n × now − sum). */
  private readonly inProgress = new Map<string, { n: number; starts: number }>();
  /**
   * Service time given so far (ms): it runs at 1/n of the wall clock while n operations run, as if they shared one
   * processor equally, so an operation is charged its share of the server, not the time it spent waiting beside
   * others (wall time would charge every client more the busier the server is).
   */
  private served = 0;
  private servedAt = performance.now();
  /** The charge of the client admitted last: where a newcomer (or an idle client) starts. */
  private clock = 0;

  /** `limit` 0 turns the shares off: every operation runs at once. `serial`: see above. */
  constructor(
    readonly limit: number,
    private readonly options: { serial?: boolean } = {},
  ) {}

  /** Operations running now. */
  get inFlight(): number {
    return this.running;
  }
  /** Operations waiting for a slot. */
  get queued(): number {
    return this.queuedCount;
  }

  /**
   * Resolves with the slot's release (call it once the operation is over; later calls do nothing) when `client`'s
   * turn comes. Rejects with the signal's reason if it aborts first (the deadline, or the client went away).
   */
  acquire(client: string, signal?: OperationSignal): Promise<Release> {
    if (this.limit === 0) return Promise.resolve(() => {});
    if (signal?.aborted)
      return Promise.reject(signal.reason ?? new ApiError('operation_timeout', 'The request was cancelled.'));
    if (this.running < this.limit && !this.options.serial && this.mayRun(client)) {
      this.serviceNow();
      this.running++;
      return Promise.resolve(this.releaser(client));
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
        // Its leaving may move the clock, and let a client that was ahead take a free slot.
        if (this.options.serial) this.grantNextTurn();
        else
          while (this.next()) {
            /* every free slot a waiting client may take */
          }
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.waiting.get(client);
      if (queue) queue.push(waiter);
      else this.waiting.set(client, [waiter]);
      this.queuedCount++;
      // Serial: admitted on a later turn. Else it waits for a slot, or, ahead of the clock with a slot free, for
      // the others' turns; with nobody else running or waiting it is the clock, and goes now.
      if (this.options.serial) this.grantNextTurn();
      else
        while (this.next()) {
          /* every free slot a waiting client may take */
        }
    });
  }

  /**
   * Moves the clock to the least charge among the clients with operations running or waiting (never back), and
   * tells whether `client` is within BURST_MS of it.
   */
  private mayRun(client: string): boolean {
    let floor = Infinity;
    for (const c of this.inProgress.keys()) floor = Math.min(floor, this.charged.get(c) ?? this.clock);
    for (const c of this.waiting.keys()) floor = Math.min(floor, this.charged.get(c) ?? this.clock);
    if (floor !== Infinity && floor > this.clock) this.clock = floor;
    return this.paidBy(client) - this.clock <= BURST_MS;
  }

  /** What `client` has paid for finished operations (at least the clock). */
  private paidBy(client: string): number {
    return Math.max(this.charged.get(client) ?? 0, this.clock);
  }

  /** What `client` has paid, plus the time its running operations have taken so far. */
  /** Brings the service time up to now (call before `running` changes). */
  private serviceNow(): number {
    const now = performance.now();
    if (this.running > 0) this.served += (now - this.servedAt) / this.running;
    this.servedAt = now;
    return this.served;
  }

  private chargeOf(client: string, now: number): number {
    const running = this.inProgress.get(client);
    return this.paidBy(client) + (running ? running.n * now - running.starts : 0);
  }

  private releaser(client: string): Release {
    let done = false;
    const start = this.serviceNow();
    const running = this.inProgress.get(client) ?? { n: 0, starts: 0 };
    running.n++;
    running.starts += start;
    this.inProgress.set(client, running);
    return (extraMs = 0) => {
      if (done) return;
      done = true;
      const ms = Math.floor(this.serviceNow() - start + extraMs);
      this.running--;
      running.n--;
      running.starts -= start;
      if (running.n === 0) this.inProgress.delete(client);
      if (ms > 0) this.charged.set(client, this.paidBy(client) + ms);
      if (this.charged.size > 1024) {
        for (const [c, v] of this.charged) if (v <= this.clock) this.charged.delete(c);
      }
      if (this.options.serial) this.grantNextTurn();
      else
        while (this.next()) {
          /* every free slot a waiting client may take */
        }
    };
  }

  /** Serial: admits the next waiting operation from a later turn of the event loop, one per turn. */
  private grantNextTurn(): void {
    if (this.grantQueued || this.running >= this.limit || this.queuedCount === 0) return;
    this.grantQueued = true;
    setImmediate(() => {
      this.grantQueued = false;
      // Nothing granted: the waiting clients are ahead of the clock; the next release turns again.
      if (this.next()) this.grantNextTurn();
    });
  }

  /**
   * Hands a free slot to the waiting client charged least (the first in turn order among equals) of those within
   * BURST_MS of the clock, which then goes to the back of the turn order.
   */
  private next(): boolean {
    if (this.running >= this.limit) return false;
    let client: string | undefined;
    let least = Infinity;
    const now = this.serviceNow();
    for (const c of this.waiting.keys()) {
      if (!this.mayRun(c)) continue;
      const charge = Math.floor(this.chargeOf(c, now));
      if (charge < least) {
        least = charge;
        client = c;
      }
    }
    // None may run yet: the clients ahead wait until the running operations' ends move the clock (each end calls next).
    if (client === undefined) return false;
    const queue = this.waiting.get(client)!;
    const waiter = queue.shift()!;
    this.queuedCount--;
    this.waiting.delete(client);
    if (queue.length > 0) this.waiting.set(client, queue);
    this.serviceNow();
    this.running++;
    waiter.grant(this.releaser(client));
    return true;
  }
}

/**
 * What an operation's result costs beyond its time: the bytes it produced (counted by the response-size budget), at
 * RESULT_BYTES_PER_MS. Reading and encoding long text is work on this process's one thread (and the database's) that
 * the operation's share of time understates: the time it is charged is divided among the operations running
 * beside it, while the text it decodes holds the event loop for all of them.
 */
export const RESULT_BYTES_PER_MS = 64 * 1024;
export function resultCharge(context: unknown): number {
  const budget = (context as { [RESPONSE_BUDGET]?: ResponseBudget } | null | undefined)?.[RESPONSE_BUDGET];
  return budget ? budget.used / RESULT_BYTES_PER_MS : 0;
}

export { clientOf };

/** The bytes an operation's result grew to (its response-size budget), for the response allowance. */
export function resultBytes(context: unknown): number {
  return (context as { [RESPONSE_BUDGET]?: ResponseBudget } | null | undefined)?.[RESPONSE_BUDGET]?.used ?? 0;
}

/** Whether the operation's key is a super-user key (not limited by the response allowance). */
export function isSuperClient(context: unknown): boolean {
  return (context as { visitor?: { isSuper?: boolean } } | undefined)?.visitor?.isSuper === true;
}

/**
 * Admits an operation of the client of `context`: first within its key's response allowance (RESPONSE_BYTES_PER_MINUTE:
 * src/http/response-allowance.ts, 429 when spent), then to a fair-share slot. Resolves with what ends both.
 */
export async function admitOperation(
  share: FairShare,
  allowance: ResponseAllowance | undefined,
  context: unknown,
  signal?: OperationSignal,
): Promise<() => void> {
  const client = clientOf(context);
  const settle = allowance ? await allowance.acquire(client, isSuperClient(context), signal) : undefined;
  let release: Release;
  try {
    release = await share.acquire(client, signal);
  } catch (err) {
    settle?.(0);
    throw err;
  }
  return () => {
    release(resultCharge(context));
    settle?.(resultBytes(context));
  };
}

/**
 * /graphql executions take their slot here. Registered before operationLimitsPlugin, whose execution deadline then
 * covers the wait: an operation still waiting at the deadline answers 503 operation_timeout like a slow one.
 */
export function fairSharePlugin(
  share: FairShare,
  allowance?: ResponseAllowance,
  /** Told when an operation is admitted, before it runs. */
  onAdmitted?: (context: unknown) => void,
): Plugin {
  return {
    onExecute({ executeFn, setExecuteFn }) {
      if (share.limit === 0 && !allowance?.perMinute) return;
      setExecuteFn(async (args) => {
        const done = await admitOperation(
          share,
          allowance,
          args.contextValue,
          (args as { signal?: OperationSignal }).signal,
        );
        onAdmitted?.(args.contextValue);
        try {
          return await executeFn(args);
        } finally {
          done();
        }
      });
    },
  };
}
