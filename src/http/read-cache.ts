// Answers to reads, kept and given again while the database has not changed since they were computed.
//
// A read's answer depends on the request (route or document, variables), on who asks (the visitor: key, user,
// scopes, groups) and on the database. The first two make the cache key. For the database, each answer is stored
// with PostgreSQL's transaction snapshot (`pg_current_snapshot()`), taken before the read ran: two equal snapshots
// mean no transaction committed or aborted between them, so the rows are the same. Every request asks for the
// snapshot afresh, so an answer is given again only when nothing at all was written since: by this instance, another
// instance on the same database, the command line or anyone with SQL access. Writes elsewhere in the database (a
// key's last use, a job) only make the next read a miss.
//
// The snapshot is one short statement; requests arriving while one is in flight share the next one (each request
// gets a snapshot taken after it arrived). What is not in the database is handled too: a change announced on the
// cache change feed (a key revoked, permissions edited) empties the cache, and an answer is given again for at most
// CACHE_SECONDS after it was computed, as long as the key and permission tables may be served from memory.
//
// Bounded by READ_CACHE_MB, least recently used first out: REST answers count their UTF-8 bytes, GraphQL answers (kept
// as objects) twice their JSON length. 0 turns it off.
import { getOperationAST, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Visitor } from '../permissions/access.js';

interface Entry<V> {
  value: V;
  snapshot: string;
  bytes: number;
  expires: number;
}

export interface ReadCacheOptions {
  /** Bytes of answers kept, as their callers count them (lookup's `store`). */
  maxBytes: number;
  /** How long an answer may be given again at most. */
  ttlMs: number;
  /** The database's current transaction snapshot (src/db/client.ts). */
  snapshot(): Promise<string>;
}

/** A kept answer, or how to keep the one about to be computed. */
export type Lookup<V> = { value: V } | { store(value: V, bytes: number): void };

/** How answers were served, for /metrics. */
export interface ReadCacheCounts {
  hit: number;
  miss: number;
}

export class ReadCache {
  private readonly entries = new Map<string, Entry<unknown>>();
  private bytes = 0;
  private running: Promise<string> | null = null;
  private waiting: Promise<string> | null = null;
  readonly counts: ReadCacheCounts = { hit: 0, miss: 0 };

  constructor(private readonly options: ReadCacheOptions) {}

  get enabled(): boolean {
    return this.options.maxBytes > 0 && this.options.ttlMs > 0;
  }
  /** Answers kept, and their size. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /**
   * A snapshot taken after this call: the one in flight was sent earlier, so callers arriving meanwhile wait for it
   * to end and share the next.
   */
  snapshot(): Promise<string> {
    if (this.waiting) return this.waiting;
    if (!this.running) return this.start();
    this.waiting = this.running.then(noop, noop).then(() => {
      this.waiting = null;
      return this.start();
    });
    return this.waiting;
  }

  private start(): Promise<string> {
    const p = this.options.snapshot();
    this.running = p;
    const done = () => {
      if (this.running === p) this.running = null;
    };
    p.then(done, done);
    return p;
  }

  /**
   * Looks `key` up: `value` when an answer computed at the current snapshot is kept; else `store`, to call with the
   * answer once it is computed (it was computed after the snapshot this lookup took).
   */
  async lookup<V>(key: string): Promise<Lookup<V>> {
    const snapshot = await this.snapshot();
    const entry = this.entries.get(key) as Entry<V> | undefined;
    if (entry && entry.snapshot === snapshot && entry.expires > Date.now()) {
      this.entries.delete(key); // to the back: most recently used
      this.entries.set(key, entry);
      this.counts.hit++;
      return { value: entry.value };
    }
    this.counts.miss++;
    const started = Date.now();
    return {
      store: (value, bytes) => this.put(key, { value, snapshot, bytes, expires: started + this.options.ttlMs }),
    };
  }

  /** lookup() of `key` as `visitor` asks it: answers are never shared between visitors. */
  lookupFor<V>(key: string, visitor: Visitor): Promise<Lookup<V>> {
    return this.lookup<V>(`${key}\0${visitorKey(visitor)}`);
  }

  private put(key: string, entry: Entry<unknown>): void {
    this.remove(key);
    if (entry.bytes > this.options.maxBytes / 8) return; // one answer may not push out most of the others
    this.entries.set(key, entry);
    this.bytes += entry.bytes;
    for (const [k] of this.entries) {
      if (this.bytes <= this.options.maxBytes) break;
      this.remove(k);
    }
  }

  private remove(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.bytes -= old.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /**
   * Answers kept at snapshot `before` stay valid at `after`: for a write the caller knows leaves them good enough (the
   * batched view counts, which answers may show one flush late), when it was the only transaction that ended
   * between the two snapshots (onlyEnded). Anything else written meanwhile leaves them as they were: misses.
   */
  carryOver(before: string, after: string): number {
    let n = 0;
    for (const e of this.entries.values()) {
      if (e.snapshot === before) {
        e.snapshot = after;
        n++;
      }
    }
    return n;
  }
}

/**
 * Whether transaction `xid` is the only one that ended (committed or rolled back) between snapshots `before` and
 * `after` (`pg_current_snapshot()` texts, `xmin:xmax:xip,…`): every other transaction is in the same state in both.
 */
export function onlyEnded(before: string, after: string, xid: string): boolean {
  const parse = (s: string) => {
    const [xmin, xmax, xip = ''] = s.split(':');
    return { xmin: BigInt(xmin!), xmax: BigInt(xmax!), xip: new Set(xip ? xip.split(',').map(BigInt) : []) };
  };
  const a = parse(before);
  const b = parse(after);
  const x = BigInt(xid);
  if (b.xmax - a.xmin > 10_000n) return false; // a long-running transaction: not worth the walk
  const ended = (s: typeof a, id: bigint) => id < s.xmin || (id < s.xmax && !s.xip.has(id));
  for (let id = a.xmin; id < b.xmax; id++) {
    if (ended(b, id) !== ended(a, id) && id !== x) return false;
  }
  return ended(b, x) && !ended(a, x);
}

function noop(): void {}

/** Everything about the visitor an answer can depend on. */
function visitorKey(v: Visitor): string {
  return `${v.apiKeyId}:${v.userId}:${v.isSuper ? 1 : 0}${v.isAdmin ? 1 : 0}${v.isModerator ? 1 : 0}:${[...v.scopes].join(',')}:${v.groupIds.join(',')}`;
}

/**
 * /graphql queries answered from the cache. Register after the plugins that decide whether an operation may run at
 * all (limits, cost): a hit skips only the execution. Mutations and subscriptions always run; so does any request whose
 * answer has errors (it is not kept).
 */
export function readCachePlugin(cache: ReadCache): Plugin {
  const ids = new WeakMap<DocumentNode, { id: number; queries: Map<string, boolean> }>();
  let next = 0;
  const isQuery = (document: DocumentNode, operationName: string | null | undefined) => {
    let doc = ids.get(document);
    if (!doc) {
      doc = { id: next++, queries: new Map() };
      ids.set(document, doc);
    }
    const name = operationName ?? '';
    let query = doc.queries.get(name);
    if (query === undefined) {
      query = getOperationAST(document, operationName)?.operation === 'query';
      doc.queries.set(name, query);
    }
    return query ? doc.id : null;
  };
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      if (!cache.enabled) return;
      const visitor = (args.contextValue as { visitor?: Visitor } | undefined)?.visitor;
      const id = visitor ? isQuery(args.document, args.operationName) : null;
      if (id === null || !visitor) return;
      const key = `graphql\0${id}\0${args.operationName ?? ''}\0${JSON.stringify(args.variableValues ?? {})}`;
      const found = await cache.lookupFor<ExecutionResult>(key, visitor);
      if ('value' in found) {
        setResultAndStopExecution(found.value);
        return;
      }
      return {
        onExecuteDone({ result }) {
          const r = result as ExecutionResult;
          // Kept as objects, which take about twice the memory of their JSON text.
          if (r && !('errors' in r && r.errors?.length) && 'data' in r && r.data)
            found.store(r, 2 * JSON.stringify(r.data).length);
        },
      };
    },
  };
}
