// Reads by key that arrive together, sent as one statement. Under load many requests each read one row by its id at
// about the same moment (a download, its relations): each such statement costs the service a round trip (a write to
// the server's socket and a read of its answer, the dearest system calls of a read) and the driver's work per
// statement, and costs the server a Bind, an Execute and a wake-up. The reads of one statement text asked for in the
// same turn of the event loop are instead sent once, with every key asked for as an array, and each caller gets the row
// of its own key: measured on one-row reads at 32 connections, about 0.6 of the service's CPU per request
// (bench/README.md, "Reads that arrive together").
//
// What a caller sees is what its own statement would have given it: the statement is sent after the last read joined
// it, so it sees every write committed before any of them asked (a write is visible to the next read, as before);
// keys asked twice share their row; a failed statement fails every read that joined it, with its error.
//
// Operations (src/db/operation-scope.ts): a shared statement belongs to all the operations that joined it, so it is
// cancelled only when every one of them has passed its deadline or gone away (each of them has answered by then:
// their answers never wait for it); one that ends early answers as before, and the statement goes on for the
// others. It counts towards no key's statements (DATABASE_STATEMENTS_PER_KEY): it holds one connection for many keys,
// and at most MAX_KEYS rows. A read outside any operation (a job) makes the statement uncancellable, as its own
// would have been. A read whose operation has already ended is sent on its own, and refused as such.
import { OperationAbort } from './operation-signal.js';
import type { Database } from './database.js';
import type { Operation } from './operation-scope.js';

/** The most keys one statement carries; reads past it start the next statement. */
export const MAX_KEYS = 100;

/** Sends one statement (outside the sharing): `operation`, when given, is the one it is bound to. */
export type Send = <R>(sql: string, params: unknown[], operation?: Operation) => Promise<R[]>;

interface Waiter {
  key: number;
  resolve(row: unknown): void;
  reject(err: unknown): void;
}

interface Batch {
  sql: string;
  /** The parameters after the keys ($2…), the same for every read of the batch. */
  params: unknown[];
  keys: number[];
  waiters: Waiter[];
  /** The joined reads' operations; null once one joined with none (the statement is then not bound). */
  operations: Operation[] | null;
}

export interface SharedReads {
  /** Reads asked for so far, and the statements sent for them (their ratio is how many reads a statement served). */
  readonly counts: { readonly reads: number; readonly statements: number };
  /**
   * The row of `key`, or undefined when there is none. `sql` reads the rows of the keys in `$1` (an `int[]`), names
   * each row's key `k` and takes `params` as `$2`…; reads of the same text and parameters asked for in the same turn
   * share one statement.
   */
  read<R extends { k: number }>(
    sql: string,
    key: number,
    params: unknown[],
    operation?: Operation,
  ): Promise<R | undefined>;
}

export function sharedReads(send: Send): SharedReads {
  /** The batches still collecting reads, by statement text and parameters. */
  const open = new Map<string, Batch>();
  const counts = { reads: 0, statements: 0 };

  const flush = (id: string, batch: Batch) => {
    if (open.get(id) === batch) open.delete(id);
    counts.statements++;
    const { operation, release } = boundToAll(batch.operations);
    send<{ k: number }>(batch.sql, [batch.keys, ...batch.params], operation).then(
      (rows) => {
        release();
        const byKey = new Map<number, unknown>();
        for (const row of rows) byKey.set(Number(row.k), row);
        for (const w of batch.waiters) w.resolve(byKey.get(w.key));
      },
      (err: unknown) => {
        release();
        for (const w of batch.waiters) w.reject(err);
      },
    );
  };

  return {
    counts,
    read<R extends { k: number }>(
      sql: string,
      key: number,
      params: unknown[],
      operation?: Operation,
    ): Promise<R | undefined> {
      counts.reads++;
      // An operation already over: its statement is refused at once, as the pool refuses it (src/db/pool.ts).
      if (operation?.signal.aborted) {
        counts.statements++;
        return send<R>(sql, [[key], ...params], operation).then((rows: R[]) => rows.find((r) => Number(r.k) === key));
      }
      const id = params.length === 0 ? sql : `${sql}\0${JSON.stringify(params)}`;
      let batch = open.get(id);
      if (!batch) {
        const fresh: Batch = { sql, params, keys: [], waiters: [], operations: [] };
        open.set(id, fresh);
        setImmediate(flush, id, fresh);
        batch = fresh;
      }
      if (!batch.keys.includes(key)) batch.keys.push(key);
      if (batch.operations) {
        if (operation) batch.operations.push(operation);
        else batch.operations = null;
      }
      const joined = batch;
      if (joined.keys.length >= MAX_KEYS) open.delete(id); // full: the next read starts another
      return new Promise<R | undefined>((resolve, reject) =>
        joined.waiters.push({ key, resolve: resolve as (row: unknown) => void, reject }),
      );
    },
  };
}

/**
 * The operation a shared statement is bound to: its signal aborts once every joined operation's has (with the last
 * one's reason). None when a read joined without an operation; the joined operation itself when there is only one.
 */
function boundToAll(operations: Operation[] | null): { operation?: Operation; release(): void } {
  if (!operations || operations.length === 0) return { release: () => {} };
  if (operations.length === 1) return { operation: operations[0], release: () => {} };
  const signal = new OperationAbort();
  const signals = [...new Set(operations.map((o) => o.signal))];
  let live = signals.length;
  const listeners = signals.map((s) => {
    const onAbort = () => {
      if (--live === 0) signal.abort(s.reason);
    };
    // One that ended between its read and the statement counts as ended now (a listener added after the abort would
    // never be called).
    if (s.aborted) onAbort();
    else s.addEventListener('abort', onAbort, { once: true });
    return onAbort;
  });
  return {
    operation: { signal },
    // Taken off when the statement has ended: the joined operations' signals outlive none of it.
    release: () => {
      for (const [i, s] of signals.entries()) s.removeEventListener('abort', listeners[i]!);
    },
  };
}

/**
 * The row of `key` through the database's shared reads when it has them (an operation's database), else with a
 * statement of its own (a transaction's session, which has none): `sql` as for SharedReads.read.
 */
export async function readByKey<R extends { k: number }>(
  db: Pick<Database, 'query'> & Partial<Pick<Database, 'readShared'>>,
  sql: string,
  key: number,
  params: unknown[] = [],
): Promise<R | undefined> {
  if (db.readShared) return db.readShared<R>(sql, key, params);
  return (await db.query<R>(sql, [[key], ...params])).find((r) => Number(r.k) === key);
}
