// The events front-ends subscribe to. A write records its events in the outbox in its own transaction
// (src/db/outbox.ts); the dispatcher (src/jobs/events.ts) claims them and publishes them here, so an event reaches
// subscribers exactly when its change committed. A payload carries ids only: every subscriber re-reads the object
// and checks its own rights when the event reaches it (src/modules/subscriptions.ts).
// In-process by default; with REDIS_URL, through Redis pub/sub, so an event published on one instance reaches the
// subscribers of every instance.
import { createPubSub, Repeater, SlidingBuffer, type PubSub, type PubSubEventTarget } from 'graphql-yoga';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from './log.js';

export interface CommentPosted {
  commentId: number;
  downloadId: number;
}
export interface VersionReleased {
  versionId: number;
  downloadId: number;
}
export interface DownloadChanged {
  downloadId: number;
}
export interface ApiKeyRevoked {
  apiKeyId: number;
}

/** Topics and their payloads; the first element of a pair is the id the topic is narrowed by. */
export type Topics = {
  commentPosted: [downloadId: number, payload: CommentPosted];
  versionReleased: [payload: VersionReleased];
  downloadChanged: [downloadId: number, payload: DownloadChanged];
  apiKeyRevoked: [apiKeyId: number, payload: ApiKeyRevoked];
};

type Target = PubSubEventTarget<Topics>;

/**
 * Counts the listeners on a target (one per open subscription per topic it listens to), and puts `prefix` before
 * every topic, so deployments sharing a Redis server do not hear each other.
 */
function counted(target: Target, prefix: string): { target: Target; count(): number } {
  let listeners = 0;
  return {
    count: () => listeners,
    target: {
      addEventListener(type, listener, options) {
        listeners += 1;
        target.addEventListener(prefix + type, listener, options);
      },
      removeEventListener(type, listener, options) {
        listeners -= 1;
        target.removeEventListener(prefix + type, listener, options);
      },
      dispatchEvent: (event) => target.dispatchEvent(new CustomEvent(prefix + event.type, { detail: event.detail })),
    },
  };
}

/** Publications kept while Redis is unreachable (see PublishBuffer); the oldest are dropped beyond this. */
export const PUBLISH_BUFFER = 10_000;

/**
 * Publications made while the publishing connection is not ready (Redis unreachable, or not yet connected) wait here,
 * in order, and are sent in that order as soon as it is ready again, before any later one. At most `limit` wait:
 * past it the oldest is dropped, with a warning (once per outage, and a count when the buffer empties). A publication
 * already written when the connection broke is sent again by ioredis on reconnection (its unfulfilled commands go
 * first); ioredis's own offline queue, which would drop everything after its retries, is not used.
 */
export class PublishBuffer {
  private pending: [channel: string, message: string][] = [];
  private dropped = 0;

  constructor(
    private readonly client: Pick<Redis, 'status' | 'publish' | 'on'>,
    private readonly log: Logger,
    private readonly limit = PUBLISH_BUFFER,
  ) {
    client.on('ready', () => this.flush());
  }

  /** Publications waiting for Redis. */
  get size(): number {
    return this.pending.length;
  }

  publish(channel: string, message: string): void {
    if (this.client.status === 'ready') {
      this.flush(); // any kept before (normally sent at 'ready' already)
      this.send(channel, message);
      return;
    }
    if (this.pending.length === 0)
      this.log.warn({ status: this.client.status }, 'events: Redis not connected; publications are kept until it is');
    this.pending.push([channel, message]);
    if (this.pending.length > this.limit) {
      this.pending.shift();
      if (this.dropped++ === 0)
        this.log.warn(
          { limit: this.limit },
          'events: the buffer of publications waiting for Redis is full; the oldest are dropped',
        );
    }
  }

  private send(channel: string, message: string): void {
    this.client.publish(channel, message).catch((err: unknown) => {
      if (this.client.status === 'ready') {
        // Redis itself refused it (not a lost connection): sending it again would fail the same way.
        this.log.warn({ err }, 'events: Redis refused a publication; it is dropped');
        return;
      }
      // Refused before it was written (the connection went down in between): it waits with the others.
      this.log.warn({ err }, 'events: Redis publish failed; kept until Redis returns');
      this.pending.unshift([channel, message]);
      if (this.pending.length > this.limit) this.pending.pop();
    });
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const waiting = this.pending;
    this.pending = [];
    const sent = waiting.length;
    // Written in order on the one connection, before any publication made after this turn.
    for (const [channel, message] of waiting) this.send(channel, message);
    this.log.info({ sent, dropped: this.dropped }, 'events: publications kept during the Redis outage sent');
    this.dropped = 0;
  }

  /** Publications still waiting when the service closes are lost: said in the log. */
  discard(): void {
    if (this.pending.length > 0)
      this.log.warn({ lost: this.pending.length }, 'events: publications waiting for Redis were dropped at shutdown');
    this.pending = [];
  }
}

/**
 * Two connections (Redis wants a connection of its own for subscribing). ioredis reconnects by itself with a growing
 * delay (at most 2 s) and subscribes to its channels again; each loss and recovery is logged. Events published
 * while Redis is unreachable wait in a bounded buffer (PublishBuffer, PUBLISH_BUFFER events) and go out in order on
 * reconnection, however long the outage; events Redis sends while a subscriber is disconnected are lost (pub/sub keeps
 * nothing).
 */
function redisTarget(url: string, prefix: string, log: Logger): { target: Target; close(): Promise<void> } {
  const connect = (role: string) => {
    // Named after the prefix, so an operator (or a test) can tell deployments apart in CLIENT LIST.
    // ioredis is loaded only when REDIS_URL is set: a start without Redis does not pay for it.
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const client = new Redis(url, {
      connectionName: `${prefix}events-${role}`.replace(/[^\w:.-]/g, '_'),
      // The publisher keeps its own buffer (PublishBuffer); a command written before a loss is sent again, never
      // failed after a number of retries.
      ...(role === 'publish' ? { enableOfflineQueue: false, maxRetriesPerRequest: null } : {}),
    });
    let down = false;
    // A refused connection says 'error'; a connection the server closed only says 'reconnecting'. Once per outage.
    const lost = (err?: unknown) => {
      if (!down) log.warn({ err, role }, 'events: Redis connection lost; reconnecting');
      down = true;
    };
    client.on('error', lost);
    client.on('reconnecting', () => lost());
    client.on('ready', () => {
      if (down) log.info({ role }, 'events: Redis connection restored');
      down = false;
    });
    return client;
  };
  const pub = connect('publish');
  const sub = connect('subscribe');
  const failed = (what: string) => (err: unknown) => log.warn({ err }, `events: Redis ${what} failed`);
  // createRedisEventTarget neither awaits nor catches these promises: a Redis outage must not become an unhandled
  // rejection, so the calls it makes go through these thin wrappers.
  const buffer = new PublishBuffer(pub, log);
  const publishClient = { publish: (channel: string, message: string) => buffer.publish(channel, message) };
  const subscribeClient = {
    on: (event: string, listener: (...args: unknown[]) => void) => sub.on(event, listener),
    subscribe: (channel: string) => sub.subscribe(channel).catch(failed('subscribe')),
    unsubscribe: (channel: string) => sub.unsubscribe(channel).catch(failed('unsubscribe')),
  };
  return {
    target: createRedisEventTarget({
      publishClient: publishClient as unknown as Redis,
      subscribeClient: subscribeClient as unknown as Redis,
    }),
    async close() {
      buffer.discard();
      // QUIT flushes what was sent; a connection that is down would queue it until Redis returns, so it is dropped.
      await Promise.allSettled([pub, sub].map((c) => (c.status === 'ready' ? c.quit() : c.disconnect())));
    },
  };
}

/** Rows as the write paths return them; only their ids travel. */
interface CommentRow {
  id: number;
  downloadId: number;
}
interface VersionRow {
  id: number;
  downloadId: number;
}
interface DownloadRow {
  id: number;
  currentVersionId: number | null;
  lastUpdate: Date;
}

/** Events kept per subscription while its subscriber is busy; older ones are dropped beyond this. */
const BUFFERED = 256;

export class Events {
  private readonly pubsub: PubSub<Topics>;
  private readonly listeners: () => number;

  constructor(
    target: Target,
    private readonly closeTarget: () => Promise<void> = async () => {},
    readonly transport: 'memory' | 'redis' = 'memory',
    prefix = '',
  ) {
    const c = counted(target, prefix);
    this.pubsub = createPubSub<Topics>({ eventTarget: c.target });
    this.listeners = c.count;
  }

  /** Listeners held by open subscriptions on this instance (0 when every stream has ended). */
  get listenerCount(): number {
    return this.listeners();
  }

  /**
   * The events of a topic (narrowed by an id where the topic has one). Each subscription drains its topic into a
   * buffer of its own: a subscriber that falls more than BUFFERED events behind loses the oldest, and never makes
   * the publisher wait or fail.
   */
  subscribe<K extends keyof Topics>(
    ...args: Topics[K] extends [number, unknown] ? [K, number] : [K]
  ): Repeater<Topics[K] extends [number, infer P] ? P : Topics[K][0]> {
    const source = (
      this.pubsub.subscribe as (...a: unknown[]) => Repeater<Topics[K] extends [number, infer P] ? P : Topics[K][0]>
    )(...args);
    return new Repeater(async (push, stop) => {
      stop.then(() => source.return());
      for await (const payload of source) void push(payload);
      stop();
    }, new SlidingBuffer(BUFFERED));
  }

  /**
   * Publishes one event the dispatcher claimed from the outbox (src/jobs/events.ts) to the subscriptions of every
   * instance. Types without a subscription topic (files, moderation) go to webhooks only.
   */
  publishEvent(type: string, objectId: number, downloadId: number): void {
    switch (type) {
      case 'comment.posted':
        this.pubsub.publish('commentPosted', downloadId, { commentId: objectId, downloadId });
        break;
      case 'version.released':
        this.pubsub.publish('versionReleased', { versionId: objectId, downloadId });
        break;
      case 'download.updated':
      case 'download.state_changed':
      case 'download.deleted':
      case 'download.restored':
        this.pubsub.publish('downloadChanged', downloadId, { downloadId });
        break;
    }
  }

  private readonly wakers = new Set<() => void>();

  /** Registers what a committed write wakes (the outbox dispatcher of this instance); returns its removal. */
  onWritten(wake: () => void): () => void {
    this.wakers.add(wake);
    return () => this.wakers.delete(wake);
  }

  /**
   * Says a write that recorded events in the outbox has committed: the dispatcher of this instance claims them at
   * once instead of at its next poll. The write paths below call it after their transaction; each returns its
   * argument, so a resolver wraps its write in it.
   */
  written(): void {
    for (const wake of this.wakers) wake();
  }

  /** A new comment has committed. Returns the comment. */
  commentPosted<C extends CommentRow>(c: C): C {
    this.written();
    return c;
  }

  /** A new download (and its first version, a release) has committed. Returns the download. */
  downloadCreated<D extends DownloadRow>(d: D): D {
    this.written();
    return d;
  }

  /** A new version of an existing download has committed. */
  versionCreated<P extends { version: VersionRow; download: { id: number } }>(p: P): P {
    this.written();
    return p;
  }

  /** The download after an update (an update that changed nothing recorded no event: waking finds nothing). */
  async downloadUpdated<D extends DownloadRow>(_started: number, write: Promise<D>): Promise<D> {
    const d = await write;
    this.written();
    return d;
  }

  /** Soft delete, hard delete, restore. Returns the download. */
  downloadChanged<D extends { id: number }>(d: D): D {
    this.written();
    return d;
  }

  /** Ends every stream opened with this key, on every instance. */
  apiKeyRevoked<K extends { id: number }>(key: K): K {
    this.pubsub.publish('apiKeyRevoked', key.id, { apiKeyId: key.id });
    return key;
  }

  close(): Promise<void> {
    return this.closeTarget();
  }
}

/** In-process events, or Redis pub/sub when `redis.url` is set (channels named `<prefix><topic>`). */
export function createEvents(redis: { url?: string; prefix: string }, log: Logger): Events {
  if (!redis.url) return new Events(new EventTarget() as Target);
  const r = redisTarget(redis.url, redis.prefix, log);
  return new Events(r.target, r.close, 'redis', redis.prefix);
}
