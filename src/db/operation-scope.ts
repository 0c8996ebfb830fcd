// The statements of one operation, bound to its deadline. An operation (a /graphql execution or a REST route) runs
// inside `boundTo(signal, fn, client, context)`; every statement the pool's connections send on its behalf, directly or
// through Prisma, is tracked (src/db/pool.ts): when the signal aborts (GRAPHQL_TIMEOUT_MS passed, or the client went
// away) each statement still running is cancelled in the server and its connection closed, and a statement the
// operation sends afterwards fails at once. So no statement of an operation answered 503 operation_timeout keeps
// running on PostgreSQL. Work outside an operation (migrations, jobs, the start) is not bound: its long statements are
// not cut.
//
// How a statement knows its operation, cheapest first:
// - The context's database (`ctx.db`, src/graphql/context.ts) puts the operation on each statement it sends
//   (`OPERATION` on pg's query config, or on the connection a session or transaction holds). No bookkeeping per
//   promise: this is the path of every hand-written statement, the hot reads and writes included.
// - The context's Prisma client runs each call inside `inOperation`, an AsyncLocalStorage scope, because Prisma gives
//   no way to pass anything down to the driver. On Node 20 an AsyncLocalStorage costs every promise of the process
//   while it is on (measured: a quarter of the CPU of a one-row read on a PostgreSQL server), so it is on only while
//   such a call is in flight, and turned off again when the last one ends.
// Only with a PostgreSQL server (the pool turns it on): on the embedded database statements run in the process, one
// at a time, where nothing could cancel them anyway.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { OperationSignal } from './operation-signal.js';

/** An operation: its deadline's signal, and whose it is (the key, and the user a super-user key acts as). */
export interface Operation {
  readonly signal: OperationSignal;
  readonly client?: string;
}

/** Where a statement (pg's query config) or a checked-out connection carries its operation. */
export const OPERATION: unique symbol = Symbol('dcs.operation');

export type Carrier = { [OPERATION]?: Operation };

const scopes = new AsyncLocalStorage<Operation>();
let enabled = false;
/** Calls in flight inside `inOperation`: the AsyncLocalStorage is on while there are any. */
let scoped = 0;

/** Turns the binding on (src/db/pool.ts, when a pool to a PostgreSQL server opens). */
export function bindStatementsToOperations(): void {
  enabled = true;
}

/** Whether statements are bound to operations at all (a PostgreSQL server's pool is open). */
export function statementsBound(): boolean {
  return enabled;
}

/**
 * Where a context keeps the operation it runs: a slot object of its own, shared by the database and Prisma views made
 * for it (src/db/operation-bound.ts), so that it survives the context's properties being copied into another object
 * (as Yoga does when it extends a context).
 */
export const OPERATION_SLOT: unique symbol = Symbol('dcs.operation-slot');

/**
 * Binds the statements `fn` sends to the operation of `signal` and `client`: through `context`'s slot when it has one
 * (its database and its Prisma client read the operation from there, src/graphql/context.ts), else through the scope
 * of `inOperation`. `client`: whose operation it is, for the pool's statements per key (DATABASE_STATEMENTS_PER_KEY).
 */
export function boundTo<T>(signal: OperationSignal, fn: () => T, client?: string, context?: unknown): T {
  if (!enabled) return fn();
  const operation: Operation = { signal, client };
  const slot = (context as { [OPERATION_SLOT]?: Carrier } | null | undefined)?.[OPERATION_SLOT];
  if (slot) {
    slot[OPERATION] = operation;
    return fn();
  }
  return inOperation(operation, fn);
}

const leave = () => {
  if (--scoped === 0) scopes.disable(); // the promise hooks go with it; the next inOperation turns them on again
};

/**
 * Runs `fn` with the statements sent from it and from what it starts bound to `operation`, by an AsyncLocalStorage
 * scope that is on only while such calls are in flight (Prisma's calls: they pass nothing down to the driver).
 */
export function inOperation<T>(operation: Operation, fn: () => T): T {
  if (!enabled) return fn();
  scoped++;
  let result: T;
  try {
    result = scopes.run(operation, fn);
  } catch (err) {
    leave();
    throw err;
  }
  if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') {
    (result as PromiseLike<unknown>).then(leave, leave);
  } else leave();
  return result;
}

/** The operation a statement was sent for: named on its query config or its connection, else the scope's. */
export function operationOf(...carriers: unknown[]): Operation | undefined {
  if (!enabled) return undefined;
  for (const c of carriers) {
    const op = c !== null && typeof c === 'object' ? (c as Carrier)[OPERATION] : undefined;
    if (op) return op;
  }
  return scoped > 0 ? scopes.getStore() : undefined;
}

/** The operation a context's slot holds (set by boundTo), if its context runs one. */
export function operationIn(slot: Carrier): Operation | undefined {
  return enabled ? slot[OPERATION] : undefined;
}

/**
 * `fn`, to be called later in the operation scope of the caller of this (or outside any, as the caller was), whatever
 * scope it is then called from. Cheaper than an AsyncResource (an async resource made and its hooks run for every
 * statement): the scope is this module's alone, so entering it again is all it takes.
 */
export function inCallersOperation<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  if (!enabled || scoped === 0) return fn;
  const operation = scopes.getStore();
  return operation
    ? (...args: A) => inOperation(operation, () => fn(...args))
    : (...args: A) => scopes.exit(fn, ...args);
}

/**
 * Runs `fn` outside any operation: work a request starts but does not own (the outbox dispatcher it wakes) must not
 * have its statements cut when that request ends or passes its deadline.
 */
export function unbound<T>(fn: () => T): T {
  return enabled && scoped > 0 ? scopes.exit(fn) : fn();
}
