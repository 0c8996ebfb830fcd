// Cache coherence across instances. Each instance caches API keys, users and the permission tables for
// CACHE_SECONDS; a write that changes one of them is applied to this instance's cache at once and announced to the
// others through PostgreSQL LISTEN/NOTIFY on the database they already share (no other component to run). On the
// embedded database there is one process, so announcing is local only.
//
// If the listening connection is lost, the caches fall back to their time to live (a change shows within
// CACHE_SECONDS) until it reconnects; on reconnecting every cache is cleared, since notifications sent meanwhile
// were missed.
import crypto from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../log.js';

export type CacheChange =
  | { kind: 'key'; hash: string }
  | { kind: 'user'; userId: number }
  | { kind: 'permissions' }
  | { kind: 'all' };

export const CHANNEL = 'dcs_cache_changes';

export interface ChangeFeed {
  /** Applies a change here and announces it to the other instances. */
  publish(change: CacheChange): void;
  /** Registers what applying a change means (called for local and remote changes alike). */
  onChange(apply: (change: CacheChange) => void): void;
  close(): Promise<void>;
}

/** One process: changes apply here and go nowhere else. */
export class LocalChangeFeed implements ChangeFeed {
  protected readonly appliers: ((c: CacheChange) => void)[] = [];
  publish(change: CacheChange): void {
    this.apply(change);
  }
  onChange(apply: (change: CacheChange) => void): void {
    this.appliers.push(apply);
  }
  protected apply(change: CacheChange): void {
    for (const a of this.appliers) a(change);
  }
  async close(): Promise<void> {}
}

/** Many instances on one PostgreSQL database: NOTIFY on write, LISTEN on a dedicated connection. */
export class PostgresChangeFeed extends LocalChangeFeed {
  private readonly origin = crypto.randomBytes(8).toString('hex');
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = 250;
  private timer: NodeJS.Timeout | null = null;
  private readonly ready: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly notify: (channel: string, payload: string) => Promise<unknown>,
    private readonly log: Logger,
  ) {
    super();
    this.ready = this.connect(false);
  }

  /** Resolves once the first LISTEN is in place (or has failed and a retry is scheduled). */
  whenListening(): Promise<void> {
    return this.ready;
  }

  override publish(change: CacheChange): void {
    this.apply(change);
    this.notify(CHANNEL, JSON.stringify({ origin: this.origin, ...change })).catch((err: unknown) => {
      this.log.warn(
        { err, change },
        'could not announce a cache change to other instances; they will see it within CACHE_SECONDS',
      );
    });
  }

  private async connect(reconnecting: boolean): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return;
      try {
        const { origin, ...change } = JSON.parse(msg.payload) as CacheChange & { origin: string };
        if (origin !== this.origin) this.apply(change as CacheChange);
      } catch {
        this.log.warn({ payload: msg.payload }, 'ignored a malformed cache change notification');
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.client = client;
      this.retryMs = 250;
      if (reconnecting) {
        this.log.info('cache change feed reconnected; caches cleared');
        this.apply({ kind: 'all' });
      }
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      this.lost(null, err);
    }
  }

  private lost(client: pg.Client | null, err: unknown): void {
    if (this.closed || (client && client !== this.client) || this.timer) return;
    this.client = null;
    this.log.warn(
      { err, retryInMs: this.retryMs },
      'cache change feed lost: caches fall back to CACHE_SECONDS until it reconnects',
    );
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect(true);
    }, this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = null;
    if (c) {
      c.removeAllListeners('end');
      await c.end().catch(() => {});
    }
  }
}
