// The connection pool to a PostgreSQL server, with what the rest of the service relies on: a connection the server
// ended stops counting at once (even while checked out), and ending the pool takes at most a given time, whatever
// is still checked out (the service's shutdown grace period bounds it).
import net from 'node:net';
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
   * Asks the server to stop the statement a connection is running (see cancelStatement): settles once the server
   * has taken the request, or it failed, or after `CANCEL_TIMEOUT_MS`; never rejects.
   */
  cancel(client: pg.PoolClient): Promise<void>;
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
    cancel: cancelStatement,
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

/** How long sending a cancel request may take (connecting included) before it is given up. */
export const CANCEL_TIMEOUT_MS = 2_000;

/**
 * Sends PostgreSQL's cancel request for `client`'s server process: a short connection of its own (no pool slot, no
 * login) carrying the process id and secret key the server gave the session, after which the server interrupts the
 * statement that session runs, if any, as pg_cancel_backend would. The server answers nothing and closes the
 * connection; a failure (server unreachable) is ignored: the caller has already given up on the statement. The request
 * is sent unencrypted, as libpq and node-postgres do: it carries only the key, which is worth nothing once the
 * session has ended. node-postgres has `Client#cancel`, but it needs the query object (a deprecated accessor) and its
 * connection's errors have no listener; the message is 16 bytes.
 */
export function cancelStatement(client: pg.ClientBase): Promise<void> {
  const { processID, secretKey, host, port } = client as pg.ClientBase & { processID?: number; secretKey?: number; host: string; port: number };
  if (processID == null || secretKey == null) return Promise.resolve();
  return new Promise((resolve) => {
    const socket = host?.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
    const done = () => { clearTimeout(timer); socket.destroy(); resolve(); };
    const timer = setTimeout(done, CANCEL_TIMEOUT_MS);
    socket.on('error', done);
    socket.on('close', done);
    socket.on('connect', () => {
      const message = Buffer.alloc(16);
      message.writeInt32BE(16, 0); // length
      message.writeInt32BE(80877102, 4); // the CancelRequest code: 1234 << 16 | 5678
      message.writeInt32BE(processID, 8);
      message.writeInt32BE(secretKey, 12);
      // The server closes its end once it has signalled the session: waiting for that makes the cancel done.
      socket.end(message);
    });
  });
}
