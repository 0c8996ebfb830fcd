// The connection pool to a PostgreSQL server, with what the rest of the service relies on: a connection the server
// ended stops counting at once (even while checked out), and ending the pool takes at most a given time, whatever
// is still checked out (the service's shutdown grace period bounds it).
import pg from 'pg';

/**
 * The server ends a session left idle inside a transaction for this long (ms). Prisma ends every transaction of ours
 * at its timeout (5 s by default, 60 s for the longest: src/jobs/reclaim.ts), so a session idle in a transaction for
 * twice that has been lost by its holder; without this it would hold its locks and its pool slot for good. A
 * DATABASE_URL parameter `?idle_in_transaction_session_timeout=` overrides it.
 */
export const IDLE_IN_TRANSACTION_MS = 120_000;

export interface Pool {
  pool: pg.Pool;
  /**
   * Closes a checked-out connection on its holder's behalf: the pool forgets it (and opens another when one is
   * needed), and the holder's own release later does nothing. For a connection in a state nobody can vouch for.
   */
  destroy(client: pg.PoolClient, reason: Error): void;
  /**
   * Ends the pool (once; later calls share the first): connections still checked out after `deadlineMs` are
   * destroyed, and it returns without waiting for them.
   */
  end(deadlineMs: number): Promise<void>;
}

export function openPool(url: string, size: number, onConnect: (client: pg.PoolClient) => void): Pool {
  const pool = new pg.Pool({ connectionString: url, max: size, idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS });
  // pg-pool counts a checked-out connection until its holder releases it; a holder that never does (or whose
  // connection died under it) would keep that slot, and pool.end() would wait for it forever.
  const out = new Set<pg.PoolClient>();
  pool.on('acquire', (client) => out.add(client));
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => out.delete(client));
  const destroy = (client: pg.PoolClient, reason: Error) => {
    if (!out.delete(client)) return;
    const release = client.release;
    client.release = () => {};
    release(reason); // released with an error, pg-pool closes the connection instead of keeping it
  };
  // An idle connection can fail (server restart, admin termination): the pool drops it and the next query
  // opens a new one. Without a listener the 'error' event would end the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // The server ended the session (idle_in_transaction_session_timeout, an administrator, a restart): a
    // checked-out connection is dropped now rather than when, if ever, its holder releases it.
    client.on('end', () => destroy(client, new Error('The database server ended this connection.')));
    onConnect(client);
  });
  let ending: Promise<void> | undefined;
  return {
    pool,
    destroy,
    end(deadlineMs) {
      return (ending ??= (async () => {
        const ended = pool.end();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), deadlineMs); });
        if (!await Promise.race([ended.then(() => false), late])) { clearTimeout(timer); return; }
        for (const client of [...out]) destroy(client, new Error('The database connection was closed at shutdown.'));
        // pg-pool resolves end() once those sockets have closed; nothing of them keeps the process alive meanwhile.
      })());
    },
  };
}
