// The statements of one operation, bound to its deadline. An operation (a /graphql execution or a REST route) runs
// inside `boundTo(signal, …)`; every statement the pool's connections send on its behalf, directly or through
// Prisma, is tracked (src/db/pool.ts): when the signal aborts (GRAPHQL_TIMEOUT_MS passed, or the client went away)
// each statement still running is cancelled in the server and its connection closed, and a statement the operation
// sends afterwards fails at once. So no statement of an operation answered 503 operation_timeout keeps running on
// PostgreSQL. Work outside an operation (migrations, jobs, the start) is not bound: its long statements are not cut.
//
// Only with a PostgreSQL server (the pool turns it on): AsyncLocalStorage costs every promise of the process on Node 20
// (measured: the embedded database's list route at half its req/s), and the embedded database's statements run in the
// process, one at a time, where nothing could cancel them anyway.
import { AsyncLocalStorage } from 'node:async_hooks';

const scopes = new AsyncLocalStorage<AbortSignal>();
let enabled = false;
/** Whose operation each signal is (the key, and the user a super-user key acts as), when its caller said. */
const clients = new WeakMap<AbortSignal, string>();

/** Turns the binding on (src/db/pool.ts, when a pool to a PostgreSQL server opens). */
export function bindStatementsToOperations(): void {
  enabled = true;
}

/**
 * Runs `fn` with the statements it sends bound to `signal` (when a PostgreSQL pool is open). `client`: whose operation
 * it is, for the pool's statements per key (DATABASE_STATEMENTS_PER_KEY, src/db/pool.ts).
 */
export function boundTo<T>(signal: AbortSignal, fn: () => T, client?: string): T {
  if (!enabled) return fn();
  if (client !== undefined) clients.set(signal, client);
  return scopes.run(signal, fn);
}

/** Whose operation sends the statements sent from here, if its caller said. */
export function operationClient(): string | undefined {
  if (!enabled) return undefined;
  const signal = scopes.getStore();
  return signal ? clients.get(signal) : undefined;
}

/** The signal the statements sent from here are bound to, if any. */
export function operationSignal(): AbortSignal | undefined {
  return enabled ? scopes.getStore() : undefined;
}

/**
 * `fn`, to be called later in the operation scope of the caller of this (or outside any, as the caller was), whatever
 * scope it is then called from. Cheaper than an AsyncResource (an async resource made and its hooks run for every
 * statement): the scope is this module's alone, so entering it again is all it takes.
 */
export function inCallersOperation<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  if (!enabled) return fn;
  const signal = scopes.getStore();
  return signal ? (...args: A) => scopes.run(signal, fn, ...args) : (...args: A) => scopes.exit(fn, ...args);
}

/**
 * Runs `fn` outside any operation: work a request starts but does not own (the outbox dispatcher it wakes) must not
 * have its statements cut when that request ends or passes its deadline.
 */
export function unbound<T>(fn: () => T): T {
  return enabled ? scopes.exit(fn) : fn();
}
