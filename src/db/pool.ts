// The connection pool to a PostgreSQL server, with what the rest of the service relies on: a connection the server
// ended stops counting at once (even while checked out), and ending the pool takes at most a given time, whatever
// is still checked out (the service's shutdown grace period bounds it).
import net from 'node:net';
import pg from 'pg';
import { bindStatementsToOperations, inCallersOperation, operationOf } from './operation-scope.js';
import { statementName } from './statement-names.js';
import type { OperationSignal } from './operation-signal.js';

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

/**
 * How long opening a connection may take (TCP and login) before it fails (ms): a server that does not answer at all (a
 * network partition, a host gone) then answers 503 service_unavailable instead of holding requests for as long as the
 * operating system keeps trying. A wait for a free connection of the pool is not bounded by it.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/** node-postgres's client, with CONNECT_TIMEOUT_MS unless the configuration gives a timeout of its own. */
class BoundedClient extends pg.Client {
  constructor(config?: pg.ClientConfig) {
    super({ ...config, connectionTimeoutMillis: config?.connectionTimeoutMillis || CONNECT_TIMEOUT_MS });
  }
}

export function openPool(
  url: string,
  size: number,
  onConnect: (client: pg.PoolClient) => void,
  statementsPerKey = 0,
): Pool {
  bindStatementsToOperations();
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    Client: BoundedClient,
  });
  // pg-pool hands a connection that frees up to the oldest waiting pool.query from inside the release of the one that
  // held it, so without this the waiting statement would be sent in the releasing operation's scope: bound to the
  // wrong deadline, and cancelled when that other operation is stopped. Its callback keeps the caller's scope.
  const connect = pool.connect.bind(pool) as (cb?: (...a: unknown[]) => void) => unknown;
  pool.connect = ((cb?: (...a: unknown[]) => void) =>
    typeof cb === 'function' ? connect(inCallersOperation(cb)) : connect()) as typeof pool.connect;
  if (statementsPerKey > 0) limitStatementsPerKey(pool, statementsPerKey, size);
  // pg-pool counts a checked-out connection until its holder releases it; a holder that never does (or whose
  // connection died under it) would keep that slot, and pool.end() would wait for it forever.
  const out = new Set<pg.PoolClient>();
  const prismaTexts: PrismaTexts = { seenOnce: new Set(), named: new Set() };
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
    nameRepeatedStatements(client, prismaTexts);
    bindToOperations(client, destroy);
    onConnect(client);
  });
  let ending: Promise<void> | undefined;
  return {
    pool,
    destroy,
    cancel: cancelStatement,
    end(deadlineMs) {
      ending ??= (async () => {
        const ended = pool.end();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), deadlineMs);
        });
        if (!(await Promise.race([ended.then(() => false), late]))) {
          clearTimeout(timer);
          return;
        }
        for (const client of [...out]) destroy(client, new Error('The database connection was closed at shutdown.'));
        // pg-pool resolves end() once those sockets have closed; nothing of them keeps the process alive meanwhile.
      })();
      return ending;
    },
  };
}

/** What a statement of an operation that was stopped fails with (nobody reads it: the operation has been answered). */
const stopped = () =>
  new Error(
    'The operation was stopped (its deadline passed, or its client went away): its statement was cancelled or not sent.',
  );

type Close = (client: pg.PoolClient, reason: Error) => void;

/** The connections running (or queueing) statements of one operation, with how many and how to close each. */
interface Running {
  clients: Map<pg.PoolClient, { close: Close; statements: number }>;
  onAbort: () => void;
}

/**
 * The operations with statements running: one abort listener per operation, however many statements it sends at once.
 * An operation's entry is taken out as soon as none of its statements runs. Left in until the operation's signal is
 * collected, it cost more than its size: V8's young-generation collector keeps the value of every entry of this
 * long-lived map alive through the next collection even once its key is garbage, and so copied each request's
 * statements and everything they held once more, then into the old generation (bench/README.md, garbage collection).
 */
const inFlight = new WeakMap<OperationSignal, Running>();

/** Records that `client` runs a statement of the operation of `signal`; returns what to call when it has ended. */
function statementOf(signal: OperationSignal, client: pg.PoolClient, close: Close): () => void {
  let running = inFlight.get(signal);
  if (!running) {
    const clients: Running['clients'] = new Map();
    const onAbort = () => {
      inFlight.delete(signal);
      for (const [c, entry] of clients) {
        entry.close(c, stopped());
        void cancelStatement(c);
      }
      clients.clear();
    };
    running = { clients, onAbort };
    inFlight.set(signal, running);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  const { clients } = running;
  const entry = clients.get(client) ?? { close, statements: 0 };
  entry.statements++;
  clients.set(client, entry);
  let ended = false;
  const own = running;
  return () => {
    if (ended) return;
    ended = true;
    if (--entry.statements === 0 && clients.get(client) === entry) clients.delete(client);
    if (clients.size === 0 && inFlight.get(signal) === own) {
      inFlight.delete(signal);
      signal.removeEventListener('abort', own.onAbort);
    }
  };
}

/** How many of Prisma's statement texts a pool names at most (each of its connections keeps those it prepared). */
export const NAMED_PRISMA_TEXTS = 256;
/** How many texts run once are remembered, to be named if they come again. */
const SEEN_ONCE_LIMIT = 1024;

/** One pool's Prisma texts: those run once (oldest first), and those named. */
interface PrismaTexts {
  seenOnce: Set<string>;
  named: Set<string>;
}

/**
 * Prisma's statements (@prisma/adapter-pg sends each unnamed, with its rows as arrays: the server parses and plans it on
 * every run) are named from a text's second run on, as the hand-written reads are from their first: the server then
 * parses each once per connection. A text run once stays unnamed; at most NAMED_PRISMA_TEXTS texts are named, the
 * rest stay unnamed. Statements that carry a name of their own, or none of Prisma's shape, are left as they are.
 */
function nameRepeatedStatements(client: pg.PoolClient, texts: PrismaTexts): void {
  const { seenOnce, named } = texts;
  const query = client.query as (...args: unknown[]) => unknown;
  client.query = function namedQuery(this: pg.PoolClient, ...args: unknown[]) {
    const first = args[0] as { text?: unknown; name?: unknown; rowMode?: unknown; submit?: unknown } | undefined;
    if (
      first &&
      typeof first === 'object' &&
      typeof first.text === 'string' &&
      first.name === undefined &&
      first.rowMode === 'array' &&
      typeof first.submit !== 'function'
    ) {
      const text = first.text;
      if (named.has(text)) first.name = statementName(text);
      else if (seenOnce.delete(text)) {
        if (named.size < NAMED_PRISMA_TEXTS) {
          named.add(text);
          first.name = statementName(text);
        }
      } else {
        if (seenOnce.size >= SEEN_ONCE_LIMIT) seenOnce.delete(seenOnce.values().next().value!);
        seenOnce.add(text);
      }
    }
    return query.apply(this, args);
  } as typeof client.query;
}

/**
 * Binds the statements `client` runs to the operation that sends them (src/db/operation-scope.ts): when the
 * operation's signal aborts, a statement of it still running is cancelled in the server and the connection closed
 * (the pool opens another when needed; closing it also keeps the cancel, which the server may act on late, from
 * hitting a later holder's statement), and the operation's later statements fail without being sent. Statements
 * sent outside an operation (migrations, jobs) are left alone.
 */
function bindToOperations(client: pg.PoolClient, destroy: (client: pg.PoolClient, reason: Error) => void): void {
  const query = client.query as (...args: unknown[]) => unknown;
  client.query = function boundQuery(this: pg.PoolClient, ...args: unknown[]) {
    const first = args[0] as { submit?: unknown } | undefined;
    const signal = operationOf(first, this)?.signal;
    if (!signal || typeof first?.submit === 'function') return query.apply(this, args);
    const last = args.length - 1;
    const callback = typeof args[last] === 'function' ? (args[last] as (...r: unknown[]) => void) : undefined;
    if (signal.aborted) {
      if (!callback) return Promise.reject(stopped());
      process.nextTick(callback, stopped());
      return undefined;
    }
    const done = statementOf(signal, client, destroy);
    if (callback)
      args[last] = (...r: unknown[]) => {
        done();
        callback(...r);
      };
    const result = query.apply(this, args) as Promise<unknown> | undefined;
    if (!callback) result?.then(done, done);
    return result;
  } as typeof client.query;
}

/**
 * DATABASE_STATEMENTS_PER_KEY: the plain statements (`pool.query`: every Prisma read and write outside a transaction,
 * and the hand-written reads) that the operations of one key (with the user a super-user key acts as) run at once;
 * the key's others wait in its own queue, in order, and the pool's other connections stay free for other keys. One
 * operation can otherwise send dozens of statements at once (30 aliases of a page: 30 lists), take every connection
 * of the pool, and put every other client's statements behind its own; and the rows it reads (long texts) arrive
 * all at once, before the response-size limit can stop it. Statements of a transaction (a connection checked out
 * with `pool.connect`) are not counted: a transaction holds its connection until it ends, and waiting here for a
 * statement it issues beside would deadlock. Statements outside an operation (jobs, the start) are not counted.
 *
 * The limit holds a key back only when its statements could keep others from a connection. With `poolSize` given, a
 * key past its limit still starts a statement while, with it, the counted statements of all keys leave at least
 * `perKey` connections of the pool unused: a key alone on the server (the forum's own integration answering page
 * views, say) uses most of the pool instead of waiting behind three of its own statements with seven connections
 * idle, and a key that comes along still finds `perKey` connections free at once. Measured with one key at 32
 * connections on a pool of 10: 6–11% less CPU per one-row read and 5–13% more of them a second than holding it to 3
 * (bench/README.md).
 */
export function limitStatementsPerKey(pool: pg.Pool, perKey: number, poolSize = 0): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const keys = new Map<string, { running: number; waiting: (() => void)[] }>();
  /** Statements of all keys running now. */
  let running = 0;
  /** Whether a key running `held` statements may start one more now. */
  const mayStart = (held: { running: number }) => held.running < perKey || running + 1 + perKey <= poolSize;
  /** Starts the waiting statements of `key` that may start now, in order. */
  const drain = (key: string, held: { running: number; waiting: (() => void)[] }) => {
    while (held.waiting.length > 0 && mayStart(held)) held.waiting.shift()!();
    if (held.running === 0 && held.waiting.length === 0) keys.delete(key);
  };
  pool.query = function limitedQuery(...args: unknown[]) {
    const key = typeof args[args.length - 1] === 'function' ? undefined : operationOf(args[0])?.client;
    if (key === undefined) return query(...args);
    let state = keys.get(key);
    if (!state) {
      state = { running: 0, waiting: [] };
      keys.set(key, state);
    }
    const held = state;
    const run = () => {
      held.running++;
      running++;
      const done = () => {
        held.running--;
        running--;
        drain(key, held);
        // A statement past its key's limit may have been waiting for the pool to have room: the keys that wait get
        // their turn as the room comes back (few keys wait at once: a key waits only behind its own statements).
        if (poolSize > 0) for (const [k, other] of keys) if (other !== held && other.waiting.length) drain(k, other);
      };
      const result = query(...args);
      result.then(done, done);
      return result;
    };
    if (held.waiting.length === 0 && mayStart(held)) return run();
    // Started later from another statement's end: in this statement's own operation (its signal, its key), not in
    // the one whose statement ended.
    return new Promise((resolve, reject) =>
      held.waiting.push(
        inCallersOperation(() => {
          run().then(resolve, reject);
        }),
      ),
    );
  } as typeof pool.query;
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
  const { processID, secretKey, host, port } = client as pg.ClientBase & {
    processID?: number;
    secretKey?: number;
    host: string;
    port: number;
  };
  if (processID == null || secretKey == null) return Promise.resolve();
  return new Promise((resolve) => {
    const socket = host?.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
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
