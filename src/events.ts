// The events front-ends subscribe to. A write records its events in the outbox in its own transaction
// (src/db/outbox.ts); the dispatcher (src/jobs/events.ts) claims them and publishes them here, so an event reaches
// subscribers exactly when its change committed. A payload carries ids only: every subscriber re-reads the object
// and checks its own rights when the event reaches it (src/modules/subscriptions.ts).
// In-process by default; with REDIS_URL, through Redis pub/sub, so an event published on one instance reaches the
// subscribers of every instance. Redis keeps nothing for a connection that is not there: an instance whose
// subscribing connection was lost reads what it missed back from the outbox when it listens again (Catchup).
import { createPubSub, Repeater, SlidingBuffer, type PubSub, type PubSubEventTarget } from 'graphql-yoga';
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from './log.js';

/** `eventId`: the outbox row the event comes from (a decimal string), so that an instance delivers it once. */
export interface CommentPosted {
  commentId: number;
  downloadId: number;
  eventId?: string;
}
export interface VersionReleased {
  versionId: number;
  downloadId: number;
  eventId?: string;
}
export interface DownloadChanged {
  downloadId: number;
  eventId?: string;
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

/** An outbox event as it is read back for a replay (src/jobs/events.ts, dispatchedSince). */
export interface DispatchedEvent {
  id: bigint | string;
  type: string;
  objectId: number;
  downloadId: number;
}

/**
 * Reads back, in outbox order and page by page, the events dispatched in the last `msAgo` milliseconds (by the
 * database's clock), once every dispatch that may have published before the call has committed.
 */
export type ReadDispatched = (msAgo: number) => AsyncIterable<DispatchedEvent[]>;

/** The outbox types subscriptions hear (the others go to webhooks only). */
export const SUBSCRIBED_TYPES = [
  'comment.posted',
  'version.released',
  'download.updated',
  'download.state_changed',
  'download.deleted',
  'download.restored',
] as const;

type Publication =
  | { topic: 'commentPosted'; id: number; payload: CommentPosted }
  | { topic: 'versionReleased'; id?: undefined; payload: VersionReleased }
  | { topic: 'downloadChanged'; id: number; payload: DownloadChanged };

/** The topic (and the id it is narrowed by) and payload an outbox event is published with; null for the others. */
export function publicationOf(
  type: string,
  objectId: number,
  downloadId: number,
  eventId?: string,
): Publication | null {
  const tag = eventId === undefined ? {} : { eventId };
  switch (type) {
    case 'comment.posted':
      return { topic: 'commentPosted', id: downloadId, payload: { commentId: objectId, downloadId, ...tag } };
    case 'version.released':
      return { topic: 'versionReleased', payload: { versionId: objectId, downloadId, ...tag } };
    case 'download.updated':
    case 'download.state_changed':
    case 'download.deleted':
    case 'download.restored':
      return { topic: 'downloadChanged', id: downloadId, payload: { downloadId, ...tag } };
    default:
      return null;
  }
}

/** Before a loss, how far back a replay reads: covers a loss noticed late and a publication kept by its publisher. */
export const REPLAY_MARGIN_MS = 60_000;
/** Outbox ids an instance remembers having delivered (the newest), so that neither path delivers one twice. */
export const REMEMBERED_EVENTS = 50_000;
/** After a replay that could not read the outbox, the next try. */
const REPLAY_RETRY_MS = 2_000;

/** The outbox id a message carries, or null (a revocation carries none). */
function eventIdOf(message: string): string | null {
  try {
    const id = (JSON.parse(message) as { eventId?: unknown } | null)?.eventId;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/**
 * What an instance's subscribing connection missed while it was lost, delivered once it listens again.
 *
 * Every message from Redis passes through `message`; one whose outbox id was already delivered is dropped. `lost`
 * notes when the connection went (the first loss of an outage). `restored` is called once the connection is
 * subscribed again to every channel: it reads back from the outbox the events dispatched since the loss (less
 * REPLAY_MARGIN_MS, never before this instance started) and hands those not yet delivered to the same listeners as a
 * message from Redis, in outbox order; messages arriving meanwhile wait and follow. Complete because the dispatcher
 * marks a row dispatched before it publishes it, and the read waits for the dispatches in progress: an event Redis
 * sent before the subscription was back is found by the read, any later one arrives live.
 */
export class Catchup {
  private readonly seen = new Set<string>();
  private lostAt: number | null = null;
  private losses = 0;
  private holding: [channel: string, message: string][] | null = null;
  private chain: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private read: ReadDispatched | null = null;

  constructor(
    /** The event target's own handler of a Redis message (the listeners of `channel`). */
    private readonly deliver: (channel: string, message: string) => void,
    private readonly prefix: string,
    private readonly log: Logger,
    private readonly opts: { marginMs: number; remember: number; startedAt: number } = {
      marginMs: REPLAY_MARGIN_MS,
      remember: REMEMBERED_EVENTS,
      startedAt: Date.now(),
    },
  ) {}

  /** Where missed events are read from (the outbox); without it nothing is replayed. */
  readFrom(read: ReadDispatched): void {
    this.read = read;
  }

  /** Whether a loss waits for its replay. */
  get behind(): boolean {
    return this.lostAt !== null;
  }

  /** A message from Redis. */
  message(channel: string, message: string): void {
    if (this.holding) this.holding.push([channel, message]);
    else this.pass(channel, message);
  }

  /** The subscribing connection is lost (or never came up). */
  lost(now = Date.now()): void {
    this.losses += 1;
    if (this.lostAt === null) this.lostAt = now;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }

  /** No subscription is open on this instance: nothing missed can be for anyone. */
  forget(): void {
    this.lostAt = null;
  }

  /** The subscribing connection listens again on every channel: replays what it missed (one replay at a time). */
  restored(): Promise<void> {
    // A listener that throws must not stop the replays that follow.
    this.chain = this.chain
      .then(() => this.replay())
      .catch((err: unknown) => this.log.warn({ err }, 'events: a replay of missed events failed'));
    return this.chain;
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
  }

  private remember(id: string): void {
    this.seen.add(id);
    if (this.seen.size > this.opts.remember) this.seen.delete(this.seen.values().next().value as string);
  }

  private pass(channel: string, message: string): void {
    const id = eventIdOf(message);
    if (id !== null) {
      if (this.seen.has(id)) return;
      this.remember(id);
    }
    this.deliver(channel, message);
  }

  private async replay(): Promise<void> {
    if (this.lostAt === null || this.read === null || this.closed) return;
    const losses = this.losses;
    const since = Math.max(this.lostAt - this.opts.marginMs, this.opts.startedAt);
    this.holding = [];
    let replayed = 0;
    try {
      for await (const page of this.read(Date.now() - since)) {
        for (const e of page) {
          const id = String(e.id);
          const p = publicationOf(e.type, e.objectId, e.downloadId, id);
          if (p === null || this.seen.has(id)) continue;
          this.remember(id);
          this.deliver(this.prefix + (p.id === undefined ? p.topic : `${p.topic}:${p.id}`), JSON.stringify(p.payload));
          replayed += 1;
        }
      }
      // A loss during the read: the next restoration reads again from the first one.
      if (this.losses === losses) this.lostAt = null;
      this.log.info({ replayed }, 'events: events dispatched during the Redis outage replayed from the outbox');
    } catch (err) {
      this.log.warn({ err }, 'events: events missed during the Redis outage could not be read back; trying again');
      if (!this.closed && this.losses === losses)
        this.retry = setTimeout(() => {
          this.retry = null;
          void this.restored();
        }, REPLAY_RETRY_MS).unref();
    } finally {
      const held = this.holding ?? [];
      this.holding = null;
      for (const [channel, message] of held) this.pass(channel, message);
    }
  }
}

/**
 * Two connections (Redis wants a connection of its own for subscribing). ioredis reconnects by itself with a growing
 * delay (at most 2 s) and subscribes to its channels again; each loss and recovery is logged. Events published
 * while Redis is unreachable wait in a bounded buffer (PublishBuffer, PUBLISH_BUFFER events) and go out in order on
 * reconnection, however long the outage. Events Redis sent while the subscribing connection was away are read back
 * from the outbox once it is subscribed again (Catchup), and every message goes through Catchup, so that an event
 * is delivered once whichever way it came.
 */
function redisTarget(
  url: string,
  prefix: string,
  log: Logger,
): { target: Target; catchup: Catchup; close(): Promise<void> } {
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
  // The target's handler of a message; Catchup calls it for messages from Redis and for events read back.
  let onMessage: (channel: string, message: string) => void = () => {};
  const catchup = new Catchup((channel, message) => onMessage(channel, message), prefix, log);
  const channels = new Set<string>();
  const subscribeClient = {
    on: (event: string, listener: (...args: unknown[]) => void) => {
      if (event !== 'message') return sub.on(event, listener);
      onMessage = listener as typeof onMessage;
      return sub.on('message', (channel: string, message: string) => catchup.message(channel, message));
    },
    subscribe: (channel: string) => {
      channels.add(channel);
      return sub.subscribe(channel).catch(failed('subscribe'));
    },
    unsubscribe: (channel: string) => {
      channels.delete(channel);
      return sub.unsubscribe(channel).catch(failed('unsubscribe'));
    },
  };
  // Closed (or never connected): what Redis sends from now on is missed until the connection listens again.
  sub.on('close', () => catchup.lost());
  sub.on('ready', () => {
    if (!catchup.behind) return;
    if (channels.size === 0) {
      catchup.forget();
      return;
    }
    // ioredis subscribes again by itself, without saying when Redis has confirmed it: this SUBSCRIBE (harmless for
    // a channel already subscribed) answers once every channel is listened to again, and only then is the outbox
    // read back. Failed (lost again): the next 'ready' tries again.
    sub
      .subscribe(...channels)
      .then(() => (sub.status === 'ready' ? catchup.restored() : undefined), failed('subscribe'));
  });
  return {
    target: createRedisEventTarget({
      publishClient: publishClient as unknown as Redis,
      subscribeClient: subscribeClient as unknown as Redis,
    }),
    catchup,
    async close() {
      catchup.close();
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
    private readonly catchup: Catchup | null = null,
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
   * instance, tagged with its outbox id. Types without a subscription topic (files, moderation) go to webhooks only.
   */
  publishEvent(type: string, objectId: number, downloadId: number, eventId?: bigint | string): void {
    const p = publicationOf(type, objectId, downloadId, eventId === undefined ? undefined : String(eventId));
    if (p === null) return;
    const publish = this.pubsub.publish as (topic: string, ...args: unknown[]) => void;
    if (p.id === undefined) publish(p.topic, p.payload);
    else publish(p.topic, p.id, p.payload);
  }

  /**
   * Where this instance reads back the events its subscribing connection missed during a Redis outage (the outbox,
   * src/jobs/events.ts). In-process events miss nothing: there it does nothing.
   */
  replayFrom(read: ReadDispatched): void {
    this.catchup?.readFrom(read);
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
  return new Events(r.target, r.close, 'redis', redis.prefix, r.catchup);
}
