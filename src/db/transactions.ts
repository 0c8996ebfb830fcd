// Prisma's transactions on the pool, made so that a transaction's connection always goes back to the pool or is
// closed. With @prisma/adapter-pg alone (6.19) it can stay checked out, idle in its transaction, for good:
// - Prisma's $disconnect cancels the transactions still waiting for a connection without a ROLLBACK; when the
//   connection reaches one of them afterwards (freed by the ROLLBACK of another it cancels), BEGIN is sent and
//   Prisma, finding the transaction cancelled, drops it: the connection is never released, and pool.end() then
//   waits for it forever (test/pool.test.ts, "disconnect").
// - Prisma sends COMMIT or ROLLBACK before asking the adapter to release the connection, and does not ask when
//   that statement failed.
// - A ROLLBACK Prisma asks for while a statement of the transaction still runs (its timeout passed during a slow
//   statement or a lock wait, or another statement of it failed) is queued behind that statement by node-postgres:
//   the connection stays checked out, and the statement runs on in the server, for as long as it takes.
// Here each transaction sends its own COMMIT or ROLLBACK (Prisma's "phantom query" mode) and releases the connection
// whatever happens: after a failure it is closed, its state being unknown. A rollback with a statement in flight
// closes the connection at once and sends the server a cancel request for it (see ReleasedTransaction.cut). The
// adapter rolls back on dispose() whatever transaction it still has, and one that begins after that.
import type pg from 'pg';
import type { SqlDriverAdapterFactory } from '@prisma/client/runtime/client';
import { TRANSACTION_CUT_OFF } from '../errors.js';

type Adapter = Awaited<ReturnType<SqlDriverAdapterFactory['connect']>>;
type Transaction = Awaited<ReturnType<Adapter['startTransaction']>>;
type Query = Parameters<Transaction['queryRaw']>[0];

/** What a transaction needs of the pool (src/db/pool.ts): to close a connection, and to cancel its statement. */
export interface Connections {
  destroy(client: pg.PoolClient, reason: Error): void;
  cancel(client: pg.PoolClient): Promise<void>;
}

/** `factory`'s adapter, with transactions that cannot leak their connection nor leave their statement running. */
export function withReleasedTransactions(
  factory: SqlDriverAdapterFactory,
  connections: Connections,
): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect() {
      const adapter = await factory.connect();
      const open = new Set<ReleasedTransaction>();
      let disposed = false;
      return {
        provider: adapter.provider,
        adapterName: adapter.adapterName,
        queryRaw: (query) => adapter.queryRaw(query),
        executeRaw: (query) => adapter.executeRaw(query),
        executeScript: (script) => adapter.executeScript(script),
        getConnectionInfo: () => adapter.getConnectionInfo?.() ?? { supportsRelationJoins: false },
        async startTransaction(isolationLevel) {
          const tx = new ReleasedTransaction(await adapter.startTransaction(isolationLevel), connections, () =>
            open.delete(tx),
          );
          if (disposed) {
            await tx.rollback().catch(() => {});
            throw new Error('The database connection is closing.');
          }
          open.add(tx);
          return tx;
        },
        async dispose() {
          disposed = true;
          // Prisma has ended or cancelled every transaction by now: one still open here is one it dropped.
          await Promise.allSettled([...open].map((tx) => tx.rollback()));
          await adapter.dispose();
        },
      };
    },
  };
}

class ReleasedTransaction implements Transaction {
  /** Prisma leaves COMMIT and ROLLBACK to commit() and rollback(). */
  readonly options = { usePhantomQuery: true };
  readonly provider: Transaction['provider'];
  readonly adapterName: string;
  private readonly client: pg.PoolClient;
  private ended?: Promise<void>;
  /** Statements sent and not yet answered. */
  private running = 0;
  /** Set when rollback() closed the connection under statements still running: what they fail with. */
  private cutOff?: Error;

  constructor(
    private readonly tx: Transaction,
    private readonly connections: Connections,
    private readonly forget: () => void,
  ) {
    this.provider = tx.provider;
    this.adapterName = tx.adapterName;
    // adapter-pg's transaction holds its pool connection as `client` (declared, protected, in its types).
    this.client = (tx as unknown as { client: pg.PoolClient }).client;
  }

  queryRaw(query: Query) {
    this.check();
    return this.track(this.tx.queryRaw(query));
  }
  executeRaw(query: Query) {
    this.check();
    return this.track(this.tx.executeRaw(query));
  }
  commit() {
    this.ended ??= this.end('COMMIT');
    return this.ended;
  }
  rollback() {
    this.ended ??= this.running > 0 ? this.cut() : this.end('ROLLBACK');
    return this.ended;
  }

  /**
   * A statement Prisma sends after the transaction ended (the rest of a query that was under way when it timed out)
   * is refused: the connection may already serve someone else.
   */
  private check() {
    if (this.ended) throw new Error('This transaction has already ended.');
  }

  private async track<T>(statement: Promise<T>): Promise<T> {
    this.running++;
    try {
      return await statement;
    } catch (err) {
      // "Connection terminated" would hide why: the caller learns its transaction ended under the statement.
      throw this.cutOff ?? err;
    } finally {
      this.running--;
    }
  }

  /**
   * Rolls back with a statement in flight. Its connection is closed now rather than after a ROLLBACK queued behind
   * the statement: the pool gets its slot back at once (and opens a new connection when it needs one), and the
   * statement fails for its caller at once. A closed connection is not enough to stop the statement in the server,
   * which notices a client gone only when it next talks to it: a cancel request interrupts it, and the session,
   * finding its client gone, ends, which rolls the transaction back. Closing rather than reusing the connection after
   * the cancel also keeps the cancel, which the server may act on late, from hitting a later holder's statement.
   * Neither needs a statement timeout on the session, so the long statements of migrations and jobs are not bounded.
   */
  private async cut() {
    this.forget();
    this.cutOff = new Error(
      `${TRANSACTION_CUT_OFF}, or it failed) while a statement of it was running; the statement was cancelled.`,
    );
    this.connections.destroy(this.client, this.cutOff);
    await this.connections.cancel(this.client);
    await this.tx.rollback(); // adapter-pg's own cleanup; its release does nothing after destroy()
  }

  private async end(sql: 'COMMIT' | 'ROLLBACK') {
    this.forget();
    try {
      await this.tx.executeRaw({ sql, args: [], argTypes: [] });
    } catch (err) {
      const reason = err instanceof Error ? err : new Error(String(err));
      this.connections.destroy(this.client, reason);
      // A failed COMMIT must reach the caller; a failed ROLLBACK has done its work, the session's end rolling the
      // transaction back (and Prisma, rolling back at a timeout, has nobody to hand the error to but the process).
      if (sql === 'COMMIT') throw err;
    }
    // adapter-pg's commit() and rollback() send nothing: they release the connection.
    await (sql === 'COMMIT' ? this.tx.commit() : this.tx.rollback());
  }
}
