// The bytes of answers one key may receive (RESPONSE_BYTES_PER_MINUTE), per instance: what the cost limit cannot
// see. The cost of an operation counts the objects it can answer, not the size of their text, and a cheap operation
// over long texts (30 aliases over pages of 100 KB descriptions: cost 3030) makes this process read, decode and
// count tens of megabytes before GRAPHQL_MAX_RESPONSE_BYTES stops it, holding the event loop and the memory that
// every other client needs. So each key (with the user a super-user key acts as, as the fair shares count it) has
// an allowance of bytes, refilled continuously at RESPONSE_BYTES_PER_MINUTE a minute up to that amount, and each of
// its operations (a /graphql execution or a REST route, both faces alike) is charged the bytes its result grew to
// (counted by the response-size budget as its values resolve: src/graphql/response-size.ts).
//
// An operation can grow to GRAPHQL_MAX_RESPONSE_BYTES before anyone knows its size, so that much is set aside from
// the allowance while it runs (given back, less what it used, when it ends): an operation starts only while the
// key's allowance, less what its running operations set aside, holds that much. Otherwise it waits for the key's own
// running operations to end (so a key runs at most RESPONSE_BYTES_PER_MINUTE ÷ GRAPHQL_MAX_RESPONSE_BYTES
// operations at once, 4 by default, and never takes a slot of the others for what it cannot pay), or, when the key
// has none running, answers 429 `mc_dm_api_error.rate_limited` at once with `Retry-After` (the seconds until the
// allowance holds enough again) and `params { kind: "response_bytes", limit, retry_after }`: nothing is read.
//
// Ordinary clients, whose answers are kilobytes, never come near it (a key answered 600 requests a minute of 20 KB
// each receives 12 MB). Per instance, as the fair shares and the execution slots are: it protects this process's
// event loop and memory. Super-user keys (the operator's own integrations) are not limited. 0 turns it off.
import { ApiError } from '../errors.js';
import type { OperationSignal } from '../db/operation-signal.js';

/** Ends an operation's charge: `usedBytes` is what its result grew to. Later calls do nothing. */
export type Settle = (usedBytes: number) => void;

interface Waiter {
  admit(): void;
  refuse(err: ApiError): void;
}

interface KeyAllowance {
  /** Bytes the key may still receive, as of `at` (may be below 0 after operations larger than what they set aside). */
  bytes: number;
  at: number;
  /** Bytes set aside by the key's running operations, and how many they are. */
  reserved: number;
  running: number;
  waiting: Waiter[];
}

export class ResponseAllowance {
  private readonly keys = new Map<string, KeyAllowance>();
  /** What one operation sets aside while it runs: its most (GRAPHQL_MAX_RESPONSE_BYTES), at most the whole allowance. */
  readonly reserve: number;

  /** `perMinute` 0 turns the allowance off. `maxResponseBytes`: the most one operation's result may grow to. */
  constructor(
    readonly perMinute: number,
    maxResponseBytes: number | undefined,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.reserve = Math.min(maxResponseBytes ?? perMinute, perMinute);
  }

  /** Keys with an allowance below full, or operations running or waiting (for tests and /metrics). */
  get tracked(): number {
    return this.keys.size;
  }

  private refilled(key: KeyAllowance): KeyAllowance {
    const t = this.now();
    key.bytes = Math.min(this.perMinute, key.bytes + ((t - key.at) * this.perMinute) / 60_000);
    key.at = t;
    return key;
  }

  private refusal(key: KeyAllowance): ApiError {
    const seconds = Math.max(1, Math.ceil(((this.reserve - key.bytes) * 60) / this.perMinute));
    return new ApiError(
      'mc_dm_api_error.rate_limited',
      `This API key has received its ${this.perMinute} bytes of answers for the last minute (RESPONSE_BYTES_PER_MINUTE): wait ${seconds} second(s), and ask for fewer or shorter fields (long texts such as description), or smaller pages.`,
      { kind: 'response_bytes', limit: this.perMinute, retry_after: seconds },
      { 'Retry-After': String(seconds) },
    );
  }

  /**
   * Resolves with the settle of `client`'s operation once it may run; rejects with 429 rate_limited when the key's
   * allowance is spent and none of its operations runs, or with the signal's reason if it aborts while waiting.
   * `exempt` (super-user keys) and an allowance of 0 admit at once and charge nothing.
   */
  acquire(client: string, exempt: boolean, signal?: OperationSignal): Promise<Settle> {
    if (this.perMinute === 0 || exempt) return Promise.resolve(() => {});
    let key = this.keys.get(client);
    if (!key) {
      if (this.keys.size >= 4096) this.prune();
      key = { bytes: this.perMinute, at: this.now(), reserved: 0, running: 0, waiting: [] };
      this.keys.set(client, key);
    }
    const state = this.refilled(key);
    if (state.waiting.length === 0 && state.bytes - state.reserved >= this.reserve)
      return Promise.resolve(this.start(client, state));
    if (state.running === 0 && state.waiting.length === 0) return Promise.reject(this.refusal(state));
    if (signal?.aborted)
      return Promise.reject(signal.reason ?? new ApiError('operation_timeout', 'The request was cancelled.'));
    return new Promise<Settle>((resolve, reject) => {
      const onAbort = () => {
        const i = state.waiting.indexOf(waiter);
        if (i >= 0) state.waiting.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.start(client, state));
        },
        refuse: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiting.push(waiter);
    });
  }

  private start(client: string, key: KeyAllowance): Settle {
    key.reserved += this.reserve;
    key.running++;
    let done = false;
    return (usedBytes) => {
      if (done) return;
      done = true;
      this.refilled(key);
      key.bytes -= Math.max(0, usedBytes);
      key.reserved -= this.reserve;
      key.running--;
      // The key's waiting operations, in order: those the allowance now covers start; once none of the key's
      // operations runs, those it does not cover are refused (nothing would free any more of it soon).
      while (key.waiting.length > 0) {
        if (key.bytes - key.reserved >= this.reserve) key.waiting.shift()!.admit();
        else if (key.running === 0) key.waiting.shift()!.refuse(this.refusal(key));
        else break;
      }
      if (key.running === 0 && key.waiting.length === 0 && key.bytes >= this.perMinute) this.keys.delete(client);
    };
  }

  /** Forgets the keys whose allowance has refilled and that have nothing running or waiting. */
  private prune(): void {
    for (const [client, key] of this.keys) {
      if (key.running === 0 && key.waiting.length === 0 && this.refilled(key).bytes >= this.perMinute)
        this.keys.delete(client);
    }
  }
}
