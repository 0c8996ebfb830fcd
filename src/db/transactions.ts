// Prisma's transactions on the pool, made so that a transaction's connection always goes back to the pool or is
// closed. With @prisma/adapter-pg alone (6.19) it can stay checked out, idle in its transaction, for good:
// - Prisma's $disconnect cancels the transactions still waiting for a connection without a ROLLBACK; when the
//   connection reaches one of them afterwards (freed by the ROLLBACK of another it cancels), BEGIN is sent and
//   Prisma, finding the transaction cancelled, drops it: the connection is never released, and pool.end() then
//   waits for it forever (test/pool.test.ts, "disconnect").
// - Prisma sends COMMIT or ROLLBACK before asking the adapter to release the connection, and does not ask when
//   that statement failed.
// Here each transaction sends its own COMMIT or ROLLBACK (Prisma's "phantom query" mode) and releases the connection
// whatever happens: after a failure it is closed, its state being unknown. The adapter rolls back on dispose()
// whatever transaction it still has, and one that begins after that.
import type pg from 'pg';
import type { SqlDriverAdapterFactory } from '@prisma/client/runtime/client';

type Adapter = Awaited<ReturnType<SqlDriverAdapterFactory['connect']>>;
type Transaction = Awaited<ReturnType<Adapter['startTransaction']>>;
type Query = Parameters<Transaction['queryRaw']>[0];

/** `factory`'s adapter, with transactions that cannot leak their connection; `destroy` closes one (src/db/pool.ts). */
export function withReleasedTransactions(factory: SqlDriverAdapterFactory, destroy: (client: pg.PoolClient, reason: Error) => void): SqlDriverAdapterFactory {
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
          const tx = new ReleasedTransaction(await adapter.startTransaction(isolationLevel), destroy, () => open.delete(tx));
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

  constructor(private readonly tx: Transaction, private readonly destroy: (client: pg.PoolClient, reason: Error) => void, private readonly forget: () => void) {
    this.provider = tx.provider;
    this.adapterName = tx.adapterName;
    // adapter-pg's transaction holds its pool connection as `client` (declared, protected, in its types).
    this.client = (tx as unknown as { client: pg.PoolClient }).client;
  }

  queryRaw(query: Query) { this.check(); return this.tx.queryRaw(query); }
  executeRaw(query: Query) { this.check(); return this.tx.executeRaw(query); }
  commit() { return (this.ended ??= this.end('COMMIT')); }
  rollback() { return (this.ended ??= this.end('ROLLBACK')); }

  /**
   * A statement Prisma sends after the transaction ended (the rest of a query that was under way when it timed out)
   * is refused: the connection may already serve someone else.
   */
  private check() {
    if (this.ended) throw new Error('This transaction has already ended.');
  }

  private async end(sql: 'COMMIT' | 'ROLLBACK') {
    this.forget();
    try {
      await this.tx.executeRaw({ sql, args: [], argTypes: [] });
    } catch (err) {
      this.destroy(this.client, err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    // adapter-pg's commit() and rollback() send nothing: they release the connection.
    await (sql === 'COMMIT' ? this.tx.commit() : this.tx.rollback());
  }
}
