// Answers to reads, kept and given again while the tables they read are unchanged.
//
// A read's answer depends on the request (route or document, variables), on who asks (the visitor: key, user,
// scopes, groups) and on the database. The first two make the cache key. For the database, each answer is stored
// with the tables it read and their versions, taken before the read ran. The versions are kept by the database itself
// (src/db/cache-versions.ts, migration 20270110000000_cache_versions): every write statement on a table bumps that
// table's version in the writer's own transaction, whoever sends it (this instance, another instance on the same
// database, the command line, raw SQL), so a bump becomes visible exactly when the data does. The tables an answer
// read are not declared by hand: they are taken from the SQL the database layer sent while the answer was computed
// (on a PostgreSQL server, the statements its own operation sent: each names its operation, and the jobs' are left
// out; on the embedded database, which names none, every statement sent between the lookup and the store counts,
// another request's included, so the list is never short; a statement whose text cannot be read makes the answer
// depend on every table).
//
// The rules, for an answer computed at versions V:
// - it is given again while every table it read is still at its version in V, for at most CACHE_SECONDS;
// - a write to a table it did not read (a comment on another download when it read no comments, a key's last use,
//   an outbox row) leaves it kept;
// - an answer about one download (src/http/cache-scope.ts decides: the download by id, its comments, versions or
//   files, on both faces) records, for the tables that belong to downloads (DOWNLOAD_TABLES: download, version,
//   file, comment, their totals, team and tags), that download's versions instead of the tables' ("comment@12"): the
//   same triggers also bump a version per download touched. So a write about another download leaves it kept. It
//   also depends on download 0 (rows whose download the trigger cannot tell, statements touching over 100 downloads)
//   and on "#pruned" (the per-download versions are bounded in the database: deleting old ones bumps it). Each lookup
//   reads the versions of the downloads it asks about only;
// - a list of one category's downloads (cache-scope.ts again: categoryId given, no search) records, in the same way,
//   that category's versions of the download rows and of the list totals (CATEGORY_TABLES; kept as download -id:
//   "download@-3"), so an edit of a download in another category leaves it kept. Other lists read whole tables and
//   are evicted by any write to them;
// - counters (a download's, version's or file's downloadCount and viewCount, a key's lastUsedAt, the daily
//   statistics) have a version of their own ("download#counts"): an update that changes only counters does not
//   touch the table's version. An answer that did not read a counter column ignores them; one that did (it names the
//   column, or selects `*`) is given again after its counters changed only while it is younger than
//   LIMITS.readCacheCounterLagMs: counters it shows are at most that late (views are also added to view_count in
//   batches, LIMITS.viewFlushMs);
// - a change announced on the cache change feed (a key revoked, permissions edited) empties the cache, as the key and
//   permission tables are served from memory.
//
// Admission (ADMIT_WINDOW): an answer is kept from the second time its key is asked while the key is among the last
// ADMIT_WINDOW keys asked once; the first request of a key neither reads the versions nor records what it read, so a
// read of a row nobody asks for twice costs the same as with the cache off (no versions statement before it, no bytes
// kept for an answer nobody will ask for again). With 0 every answer is kept from its first computation.
//
// Looking the versions up is one short statement; requests arriving while one is in flight share the next one (each
// request gets versions read after it arrived).
//
// Concurrent misses: a miss whose lookup read the very versions another miss of the same key read (the same versions
// statement) waits for that one's answer, up to SHARE_WAIT_MS, instead of computing it too: that answer was computed
// after versions read after this request arrived, so it is as fresh as its own would be. A dropped answer, an
// emptied cache or the wait running out leaves it to compute its own. (A write that empties a popular answer had
// every client asking for it compute it at once: at 500,000 downloads the unfiltered list's p99 reached 890 ms.)
//
// Answers are kept as the UTF-8 bytes of the JSON sent (both faces), each in a buffer of its own, and written as they
// are on a hit: bounded by READ_CACHE_MB of those bytes, least recently used first out. 0 turns it off. (GraphQL
// answers were kept as graphql-js result objects before: null-prototype dictionaries that took 3.3 times their JSON
// on the heap, gave the collector a large old generation to walk, and were serialized again on every hit.)
import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Visitor } from '../permissions/access.js';
import { ownUtf8 } from '../bytes.js';
import { CacheScopes } from './cache-scope.js';
import { OPERATION, OPERATION_SLOT, type Carrier, type Operation } from '../db/operation-scope.js';
import {
  COUNTS,
  CATEGORY_TABLES,
  DOWNLOAD_TABLES,
  PRUNED,
  type Scope,
  type StatementReads,
  type TableVersions,
} from '../db/cache-versions.js';

interface Entry<V> {
  value: V;
  bytes: number;
  expires: number;
  /** When its computation started (Date.now()). */
  started: number;
  /** The tables it read, with their versions then; null: it depends on every table (`all`). */
  tables: string[] | null;
  seen: string[];
  /** The counters it read ("download#counts"), with their versions then. */
  counters: string[];
  countersSeen: string[];
  all: string;
}

/** The statements sent while one answer is computed: what it read. */
interface Collector {
  started: number;
  tables: Set<string>;
  all: boolean;
  open: boolean;
  /** The slot of the request's context, where its operation is put when it runs (src/db/operation-scope.ts). */
  owner?: Carrier;
}

export interface ReadCacheOptions {
  /** Bytes of answers kept, as their callers count them (lookup's `store`). */
  maxBytes: number;
  /** How long an answer may be given again at most. */
  ttlMs: number;
  /** How long an answer that shows counters may be given again after they changed. */
  counterLagMs: number;
  /** The tables' versions now, with those of these downloads and of these versions' downloads (src/db/cache-versions.ts). */
  versions(scope?: { downloads?: number[]; versions?: number[] }): Promise<TableVersions>;
  /** The tables a statement read (src/db/cache-versions.ts StatementReader). */
  readsOf(sql: string | undefined): StatementReads;
  /** Called (one at a time) when many version bumps wait to be compacted. */
  compact?(): Promise<void>;
  /** Bumps waiting past which compact() is called. */
  compactAt?: number;
  /**
   * Keys remembered as asked once (default 0: every answer is kept from its first computation). With N > 0 a key's
   * answer is kept only when it is asked again while it is among the last N keys asked once: the first request of a
   * key reads no versions and records nothing (see "Admission" above).
   */
  admitWindow?: number;
}

/** The next versions statement, with the downloads and versions its callers asked for. */
interface Waiting {
  promise: Promise<TableVersions>;
  downloads: Set<number>;
  versions: Set<number>;
}

/**
 * A kept answer, or how to keep the one about to be computed (`drop`: it will not be). `passed`: the key is not
 * admitted (asked for the first time), so store and drop do nothing and the caller need not prepare what it would keep.
 */
export type Lookup<V> = { value: V } | { store(value: V, bytes: number): void; drop(): void; passed?: true };

/** How answers were served, for /metrics. */
export interface ReadCacheCounts {
  hit: number;
  miss: number;
}

/** An answer computed for longer than this is not kept (what it read is no longer watched). */
const COLLECT_MS = 60_000;
/**
 * How long a miss waits for the same answer being computed by another request (see "Concurrent misses"); past it, it
 * computes its own. Also how long such a computation is offered to later misses at all.
 */
export const SHARE_WAIT_MS = 1_000;

/** A miss being computed: the versions its lookup read, and its answer once stored (undefined: dropped). */
interface Computing {
  versions: TableVersions;
  started: number;
  answer: Promise<unknown>;
  settle(value: unknown): void;
}

export class ReadCache {
  private readonly entries = new Map<string, Entry<unknown>>();
  /** Keys asked once and not kept (their hashes), oldest first: a second request within the window is kept. */
  private readonly askedOnce = new Set<number>();
  private bytes = 0;
  private running: Promise<TableVersions> | null = null;
  /** The next versions statement, with the downloads and versions its callers asked for. */
  private waiting: Waiting | null = null;
  private compacting = false;
  /** Answers being computed, oldest first. */
  private readonly collecting = new Set<Collector>();
  /** The latest miss of each key being computed, oldest first (see "Concurrent misses"). */
  private readonly computing = new Map<string, Computing>();
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
   * Versions read after this call: the statement in flight was sent earlier, so callers arriving meanwhile wait for
   * it to end and share the next (which reads the versions of every download they asked for).
   */
  versions(scope?: Scope): Promise<TableVersions> {
    if (!this.waiting && !this.running) {
      const next = { downloads: new Set<number>(), versions: new Set<number>() };
      add(next, scope);
      return this.start(next);
    }
    if (!this.waiting) {
      const next = { downloads: new Set<number>(), versions: new Set<number>() } as Waiting;
      next.promise = this.running!.then(noop, noop).then(() => {
        this.waiting = null;
        return this.start(next);
      });
      this.waiting = next;
    }
    add(this.waiting, scope);
    return this.waiting.promise;
  }

  private start(scope: { downloads: Set<number>; versions: Set<number> }): Promise<TableVersions> {
    const p = this.options.versions({ downloads: [...scope.downloads], versions: [...scope.versions] });
    this.running = p;
    const done = () => {
      if (this.running === p) this.running = null;
    };
    p.then((v) => {
      done();
      this.maybeCompact(v);
    }, done);
    return p;
  }

  private maybeCompact(v: TableVersions): void {
    const { compact, compactAt = 1000 } = this.options;
    if (!compact || this.compacting || v.pending < compactAt) return;
    this.compacting = true;
    compact()
      .catch(noop)
      .finally(() => {
        this.compacting = false;
      });
  }

  /**
   * A statement the database layer sent (src/db/database.ts onStatement): what the answers being computed read. A
   * statement that says which operation sent it (on a PostgreSQL server) counts for the answer of that operation
   * only, and for answers whose operation is not known; one that does not (the embedded database) counts for all.
   */
  observe(sql: string | undefined, operation?: Operation): void {
    if (this.collecting.size === 0) return;
    const reads = this.options.readsOf(sql);
    for (const c of this.collecting) {
      if (operation !== undefined && c.owner !== undefined) {
        const own = c.owner[OPERATION]; // set only while statements are bound to operations
        if (own !== undefined && own !== operation) continue;
      }
      if (reads === 'all') c.all = true;
      else for (const t of reads) c.tables.add(t);
    }
  }

  /**
   * The operation of the context whose slot is `owner` starts running now (its fair-share slot is granted). Whatever
   * its answers being computed were seen to read until now was read by other operations: nothing of its own is sent
   * between its lookup and its start. On the embedded database, whose statements name no operation, a read waiting
   * its turn behind writes no longer counts what they read as its own (the answer was then evicted by the next write
   * to any of it); after the start every statement counts, as before.
   */
  started(owner: Carrier | undefined): void {
    if (!owner) return;
    for (const c of this.collecting) {
      if (c.owner !== owner) continue;
      c.tables.clear();
      c.all = false;
    }
  }

  /**
   * Looks `key` up: `value` when a kept answer is still valid (see the rules above); else `store`, to call with the
   * answer once it is computed (it was computed after the versions this lookup read), or `drop` when it will not be.
   */
  async lookup<V>(key: string, scope?: Scope, owner?: Carrier): Promise<Lookup<V>> {
    if (!this.admitted(key)) {
      this.counts.miss++;
      return PASS;
    }
    const versions = await this.versions(scope);
    const now = Date.now();
    const entry = this.entries.get(key) as Entry<V> | undefined;
    if (entry && entry.expires > now && this.valid(entry, versions, now)) {
      this.entries.delete(key); // to the back: most recently used
      this.entries.set(key, entry);
      this.counts.hit++;
      return { value: entry.value };
    }
    // Concurrent misses: the same answer being computed after the very versions this lookup read (one versions
    // statement serves the lookups arriving together) is as fresh as one this request would compute, so it waits for
    // that answer rather than computing it again (a write that empties a popular answer otherwise has every client
    // asking for it compute it at once). Not for longer than SHARE_WAIT_MS, and not if it is dropped.
    const pending = this.computing.get(key);
    if (pending && pending.versions === versions && pending.started > now - SHARE_WAIT_MS) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const value = await Promise.race([
        pending.answer,
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), SHARE_WAIT_MS - (now - pending.started));
        }),
      ]);
      clearTimeout(timer);
      if (value !== undefined) {
        this.counts.hit++;
        return { value: value as V };
      }
    }
    this.counts.miss++;
    for (const c of this.collecting) {
      if (c.started > now - COLLECT_MS) break;
      c.open = false;
      this.collecting.delete(c);
    }
    for (const [k, p] of this.computing) {
      if (p.started > now - SHARE_WAIT_MS) break;
      this.computing.delete(k);
      p.settle(undefined);
    }
    const c: Collector = { started: now, tables: new Set(), all: false, open: true, owner };
    this.collecting.add(c);
    let settle!: (value: unknown) => void;
    const mine: Computing = {
      versions,
      started: now,
      answer: new Promise((resolve) => {
        settle = resolve;
      }),
      settle: (value) => settle(value),
    };
    this.computing.delete(key); // to the back: the newest
    this.computing.set(key, mine);
    const finish = (value: unknown) => {
      if (this.computing.get(key) === mine) this.computing.delete(key);
      mine.settle(value);
    };
    return {
      store: (value, bytes) => {
        this.collecting.delete(c);
        if (c.open) this.put(key, this.entryOf(value, bytes, c, versions, downloadOf(scope, versions)));
        finish(c.open ? value : undefined);
        c.open = false;
      },
      drop: () => {
        this.collecting.delete(c);
        c.open = false;
        finish(undefined);
      },
    };
  }

  /**
   * Whether `key`'s answer may be kept: it is kept already, or it was asked once within the window (then it is no
   * longer remembered as asked once). A key asked for the first time is remembered, the oldest forgotten past the
   * window. Keys are remembered by a 32-bit hash: two keys sharing one admit each other, which costs only a versions
   * statement.
   */
  private admitted(key: string): boolean {
    const window = this.options.admitWindow ?? 0;
    if (window <= 0 || this.entries.has(key)) return true;
    const h = hash32(key);
    if (this.askedOnce.delete(h)) return true;
    this.askedOnce.add(h);
    if (this.askedOnce.size > window) this.askedOnce.delete(this.askedOnce.values().next().value!);
    return false;
  }

  /**
   * The entry of an answer; `download`: the one download it is about (its scope), whose versions it records for the
   * tables of DOWNLOAD_TABLES (with download 0's and PRUNED) instead of the tables' own; negative: the category -id whose
   * list it is, for the tables of CATEGORY_TABLES.
   */
  private entryOf<V>(
    value: V,
    bytes: number,
    c: Collector,
    versions: TableVersions,
    download: number | null,
  ): Entry<V> {
    const keys = new Set<string>();
    // A category's answer (a negative id) records that category's versions of CATEGORY_TABLES, the others by table.
    const scoped = download === null ? null : download < 0 ? CATEGORY_TABLES : DOWNLOAD_TABLES;
    for (const t of c.tables) {
      if (scoped?.[t.endsWith(COUNTS) ? t.slice(0, -COUNTS.length) : t]) keys.add(`${t}@${download}`).add(`${t}@0`);
      else keys.add(t);
    }
    // Its download's versions (a version's files: a version moved to another download is seen), and PRUNED.
    if (download !== null && download > 0) keys.add(`version@${download}`).add(`version@0`);
    if (download !== null) keys.add(PRUNED);
    const tables: string[] = [];
    const counters: string[] = [];
    for (const k of keys) (k.includes(COUNTS) ? counters : tables).push(k);
    const at = (t: string) => versions.of.get(t) ?? '0';
    return {
      value,
      bytes,
      started: c.started,
      expires: c.started + this.options.ttlMs,
      tables: c.all ? null : tables,
      seen: tables.map(at),
      counters,
      countersSeen: counters.map(at),
      all: versions.all,
    };
  }

  private valid(e: Entry<unknown>, versions: TableVersions, now: number): boolean {
    if (e.tables === null) return e.all === versions.all;
    for (let i = 0; i < e.tables.length; i++) if (!same(versions, e.tables[i]!, e.seen[i]!)) return false;
    if (now - e.started < this.options.counterLagMs) return true;
    for (let i = 0; i < e.counters.length; i++) if (!same(versions, e.counters[i]!, e.countersSeen[i]!)) return false;
    return true;
  }

  /** lookup() of `key` as `visitor` asks it: answers are never shared between visitors. */
  lookupFor<V>(key: string, visitor: Visitor, scope?: Scope, owner?: Carrier): Promise<Lookup<V>> {
    return this.lookup<V>(`${key}\0${visitorKey(visitor)}`, scope, owner);
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

  /** Empties the cache; answers being computed now are not kept either (they may have read what changed). */
  clear(): void {
    this.entries.clear();
    this.askedOnce.clear();
    this.bytes = 0;
    for (const c of this.collecting) c.open = false;
    this.collecting.clear();
    // Nor given to the misses waiting for them, nor to later ones.
    for (const p of this.computing.values()) p.settle(undefined);
    this.computing.clear();
  }
}

function noop(): void {}

/** What lookup() answers for a key not admitted: compute the answer, keep nothing. */
const PASS = { store: noop, drop: noop, passed: true } as const;

/** FNV-1a over the UTF-16 code units of `text`. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function add(into: { downloads: Set<number>; versions: Set<number> }, scope: Scope | undefined): void {
  if (!scope) return;
  if ('download' in scope) into.downloads.add(scope.download);
  else if ('category' in scope) into.downloads.add(-scope.category);
  else into.versions.add(scope.version);
}

/**
 * The download a scope names, once the versions say which a version belongs to; a category as its negated id (null:
 * none, answers by table).
 */
function downloadOf(scope: Scope | undefined, versions: TableVersions): number | null {
  if (!scope) return null;
  if ('download' in scope) return scope.download;
  if ('category' in scope) return -scope.category;
  const d = versions.of.get(`=${scope.version}`);
  return d === undefined ? null : Number(d);
}

/**
 * A version still at what an answer saw. A download's versions are there only for the downloads asked for: one that
 * is missing (asked under another scope) is a change.
 */
function same(versions: TableVersions, key: string, seen: string): boolean {
  const v = versions.of.get(key);
  return v === undefined ? !key.includes('@') && seen === '0' : v === seen;
}

/** Everything about the visitor an answer can depend on. */
/** Each visitor's part of a key, made once per visitor (one serves every request of a cached key row: auth/visitor.ts). */
const visitorKeys = new WeakMap<Visitor, string>();
function visitorKey(v: Visitor): string {
  let key = visitorKeys.get(v);
  if (key === undefined) {
    key = `${v.apiKeyId}:${v.userId}:${v.isSuper ? 1 : 0}${v.isAdmin ? 1 : 0}${v.isModerator ? 1 : 0}:${[...v.scopes].join(',')}:${v.groupIds.join(',')}`;
    visitorKeys.set(v, key);
  }
  return key;
}

interface QueryArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variableValues?: Record<string, unknown> | null;
  contextValue?: unknown;
}

/**
 * The keys of /graphql queries in the read cache. One per server, shared by readCachePlugin and the direct path for
 * queries run before (src/http/known-queries.ts), so that either finds what the other kept.
 */
export class GraphqlAnswers {
  private scopes: CacheScopes | null = null;
  private readonly ids = new WeakMap<DocumentNode, { id: number; queries: Map<string, boolean> }>();
  private next = 0;

  constructor(readonly cache: ReadCache) {}

  private queryId(document: DocumentNode, operationName: string | null | undefined): number | null {
    let doc = this.ids.get(document);
    if (!doc) {
      doc = { id: this.next++, queries: new Map() };
      this.ids.set(document, doc);
    }
    const name = operationName ?? '';
    let query = doc.queries.get(name);
    if (query === undefined) {
      query = getOperationAST(document, operationName)?.operation === 'query';
      doc.queries.set(name, query);
    }
    return query ? doc.id : null;
  }

  /** The cache's lookup for a query's answer; null when none is kept (the cache is off, a mutation, no visitor). */
  lookup(args: QueryArgs): Promise<Lookup<Buffer>> | null {
    if (!this.cache.enabled) return null;
    const visitor = (args.contextValue as { visitor?: Visitor } | undefined)?.visitor;
    const id = visitor ? this.queryId(args.document, args.operationName) : null;
    if (id === null || !visitor) return null;
    const key = `graphql\0${id}\0${args.operationName ?? ''}\0${JSON.stringify(args.variableValues ?? {})}`;
    this.scopes ??= new CacheScopes(args.schema);
    const scope = this.scopes.scopeOf(args.document, args.operationName, args.variableValues);
    const owner = (args.contextValue as { [OPERATION_SLOT]?: Carrier })[OPERATION_SLOT];
    return this.cache.lookupFor<Buffer>(key, visitor, scope, owner);
  }
}

/**
 * What a result keeps: its data alone, as UTF-8 bytes, or null when it is not kept. Answers with errors are not kept,
 * nor (none does today) with extensions.
 */
export function keptBytesOf(result: ExecutionResult | undefined): Buffer | null {
  const plain = !result?.errors?.length && !Object.keys(result?.extensions ?? {}).some((k) => k !== 'http');
  return plain && result?.data ? ownUtf8(JSON.stringify({ data: result.data })) : null;
}

/**
 * /graphql queries answered from the cache. Register after the plugins that decide whether an operation may run at
 * all (limits, cost): a hit skips only the execution. Mutations and subscriptions always run; so does any request whose
 * answer has errors (it is not kept).
 */
export function readCachePlugin(answers: GraphqlAnswers): Plugin {
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const lookup = answers.lookup(args as QueryArgs);
      if (!lookup) return;
      const found = await lookup;
      if ('value' in found) {
        setResultAndStopExecution(keptResult(found.value));
        return;
      }
      if (found.passed) return;
      return {
        onExecuteDone({ result }) {
          const bytes = keptBytesOf(result as ExecutionResult);
          if (bytes) found.store(bytes, bytes.length);
          else found.drop();
        },
      };
    },
  };
}

/**
 * A kept answer as an execution result. Yoga's JSON result processor sends what a result's `stringify` returns, so
 * the kept bytes go out as they are; `data` is parsed only if something reads it (another plugin, or a processor
 * that serializes results itself, such as text/event-stream's).
 */
function keptResult(bytes: Buffer): ExecutionResult {
  let data: ExecutionResult['data'] | undefined;
  return {
    get data() {
      data ??= (JSON.parse(bytes.toString('utf8')) as ExecutionResult).data;
      return data;
    },
    // Yoga passes what this returns to its Response as the body: bytes are a body as good as text.
    stringify: () => bytes,
  } as ExecutionResult;
}
