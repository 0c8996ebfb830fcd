// What the rest of the service sees of the database, whichever it is (PGlite in-process or a PostgreSQL server):
// src/db/client.ts opens one; the migrator and the read paths take it by this shape.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { TableVersions } from './cache-versions.js';
import type { Operation } from './operation-scope.js';

/** One connection's worth of raw SQL, for work that must stay on a single session (advisory locks). */
export interface Session {
  exec(sql: string): Promise<void>;
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

export interface StatementOptions {
  prepared?: boolean;
  /** The operation the statement is sent for (src/db/operation-scope.ts): cancelled when its deadline passes. */
  operation?: Operation;
}

export interface Database {
  kind: 'pglite' | 'postgres';
  /** The server's URL (PostgreSQL only): for connections of their own, such as the cache change feed's LISTEN. */
  url?: string;
  prisma: PrismaClient;
  /**
   * One statement straight through the driver, outside Prisma: for the hand-written SQL of the hottest reads
   * (each module's store.ts), where Prisma's per-statement cost would dominate. Waits for an open Prisma transaction.
   * Prepared once per connection under a name (src/db/statement-names.ts), so PostgreSQL may come to run it with
   * a generic plan, made without the parameters' values; `{ prepared: false }` has it planned for its values every
   * time, for a statement whose best plan depends on them (a search: a common word walks an index in order, a rare
   * one reads its few matches): on a server it is sent unnamed; the embedded database parses it once all the same
   * and runs it with plan_cache_mode force_custom_plan (src/db/lite-statements.ts).
   */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[], opts?: StatementOptions): Promise<R[]>;
  /**
   * The row of `key`, or undefined: `sql` reads the rows of the keys in `$1` (an `int[]`), names each row's key `k`,
   * and takes `params` as `$2`…. The reads of one text and the same parameters asked for in the same turn of the
   * event loop, by any operations, are sent as one statement (src/db/shared-reads.ts). Counted and seen as one
   * statement of each operation that asked.
   */
  readShared<R extends { k: number }>(
    sql: string,
    key: number,
    params?: unknown[],
    opts?: Pick<StatementOptions, 'operation'>,
  ): Promise<R | undefined>;
  /** readShared()'s reads so far, and the statements sent for them. */
  sharedReadCounts(): { readonly reads: number; readonly statements: number };
  /** Runs `fn` on one dedicated connection (its statements bound to `operation`, when given). */
  session<T>(fn: (s: Session) => Promise<T>, operation?: Operation): Promise<T>;
  /**
   * Runs `fn` in a transaction of raw SQL on one connection, outside Prisma: committed when `fn` returns, rolled back
   * when it throws (on a server, the connection is then closed, which rolls back whatever state it was in). The
   * embedded database runs nothing else meanwhile. For a job's short transactions, where Prisma's per-statement
   * cost would dominate (the outbox dispatcher).
   */
  transaction<T>(fn: (s: Session) => Promise<T>, operation?: Operation): Promise<T>;
  /** Cheap round trip, for /readyz. */
  ping(): Promise<void>;
  /** Connections to the database: the pool's (PostgreSQL server), or the one in-process connection (embedded). */
  connections(): { total: number; idle: number; waiting: number };
  /**
   * The tables' versions now (src/db/cache-versions.ts), for the read cache: one short statement, not counted by
   * statements() nor seen by onStatement(). With the versions of these downloads, and of the downloads of these
   * versions (what answers scoped to them read).
   */
  cacheVersions(scope?: { downloads?: number[]; versions?: number[] }): Promise<TableVersions>;
  /** Moves the waiting version bumps into the versions table (src/db/cache-versions.ts); not counted either. */
  compactCacheVersions(): Promise<void>;
  /**
   * Calls `fn` with the text of every statement sent from now on, through Prisma or not, in transactions or not
   * (undefined when a statement has no text to read): the read cache learns from it what an answer read. On a
   * PostgreSQL server, only the statements sent on behalf of an operation (src/db/operation-scope.ts): the jobs' are
   * left out; the embedded database cannot tell them apart (that would cost every request) and reports all.
   */
  onStatement(fn: (sql: string | undefined, operation?: Operation) => void): void;
  /** SQL statements sent since the database was opened (outside transactions): for tests that bound query counts. */
  statements(): number;
  /**
   * Closes the database. On a server, connections still checked out after `deadlineMs` (default 5 s) are closed
   * under their holders, so closing never waits longer than that.
   */
  close(opts?: { deadlineMs?: number }): Promise<void>;
}
