// Table versions for the read cache (src/http/read-cache.ts), kept by the database (migration
// 20270110000000_cache_versions): every write statement on a table, whoever sends it, adds a row to "cache_bumps" in
// its own transaction, so a table's version (its "cache_versions" row plus its rows in "cache_bumps") changes exactly
// when a write to it commits. An update that changes only counter columns (COUNTER_COLUMNS) bumps "<table>#counts"
// instead of the table.
//
// What a cached answer read is taken from the SQL its operation sent (StatementReader): every identifier that names a
// table of the schema, and, for each table with counters, whether the statement names one of its counter columns (or
// `*`). A statement that cannot be read (no text) makes the answer depend on every table.
//
// Limits of reading SQL this way, which the schema keeps true (test/read-cache.test.ts checks the catalogue): every
// table has the triggers; there are no views; the functions a read may call read no table. A write without RETURNING
// (an UPDATE that stamps a key's use) reads nothing back: its target is not a dependency, the tables it reads are.

/** Counter columns: an update that changes only these bumps "<table>#counts". `*`: the whole table is counters. */
export const COUNTER_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  download: ['downloadCount', 'viewCount'],
  version: ['downloadCount'],
  file: ['downloadCount'],
  api_key: ['lastUsedAt'],
  download_daily_stats: ['*'],
};

/** The suffix of a table's counters version. */
export const COUNTS = '#counts';

/**
 * Tables whose writes also say which downloads they touched (migration 20270120000000_download_scoped_versions): the
 * column that names the download, or the version (`via: 'version'`). A version per download is "<table>@<id>" (and
 * "<table>#counts@<id>"); download 0 stands for rows whose download is unknown, and for statements touching many.
 */
export const DOWNLOAD_TABLES: Readonly<Record<string, { column: string; via: 'download' | 'version' }>> = {
  download: { column: 'id', via: 'download' },
  version: { column: 'downloadId', via: 'download' },
  file: { column: 'versionId', via: 'version' },
  comment: { column: 'downloadId', via: 'download' },
  comment_total: { column: 'downloadId', via: 'download' },
  file_total: { column: 'versionId', via: 'version' },
  team_member: { column: 'downloadId', via: 'download' },
  download_tag: { column: 'downloadId', via: 'download' },
};

/**
 * Tables whose writes also say which categories they touched (migration 20270130000000_category_scoped_versions): the
 * column that names the category. A category's versions are kept as those of download -id ("download@-12" for
 * category 12), beside the downloads'; download 0 stands for rows whose category is unknown, and for statements
 * touching many.
 */
export const CATEGORY_TABLES: Readonly<Record<string, { column: string }>> = {
  download: { column: 'categoryId' },
  download_total: { column: 'categoryId' },
};

/** Bumped when rows of cache_download_versions are deleted: every per-download (or per-category) answer depends on it. */
export const PRUNED = '#pruned';

/**
 * The versions of one download that answers about it may read, by name ("comment@12", "download#counts@12"); for a
 * negative id, those of the category -id ("download@-3"); for 0, both sets.
 */
export function downloadKeys(id: number): string[] {
  const out: string[] = [];
  if (id >= 0) for (const t of Object.keys(DOWNLOAD_TABLES)) out.push(`${t}@${id}`, `${t}${COUNTS}@${id}`);
  if (id <= 0) for (const t of Object.keys(CATEGORY_TABLES)) out.push(`${t}@${id}`, `${t}${COUNTS}@${id}`);
  return out;
}

/** What an answer about one download (or one version's files), or one category's downloads, is scoped to. */
export type Scope = { download: number } | { version: number } | { category: number };

/**
 * The versions of the tables now: by name ("download", "download#counts"), and all of them as one text. Versions of
 * downloads ("comment@12") are there only for the downloads asked for (and download 0; a category asked for as its
 * negated id), every one of their names
 * present; "=<version id>" gives the download of a version asked for.
 */
export interface TableVersions {
  of: ReadonlyMap<string, string>;
  /** Changes whenever any version does. */
  all: string;
  /** Rows waiting in cache_bumps (compaction moves them into cache_versions). */
  pending: number;
}

/** What one statement read: tables (and "<table>#counts" for those whose counters it names), or everything. */
export type StatementReads = readonly string[] | 'all';

/**
 * One statement: the versions of the tables, the rows waiting in cache_bumps (table name ''), and those of the
 * downloads $1 (categories among them as negated ids) and of the versions $2 (with "=<version id>": its download) and
 * of download 0.
 */
export const VERSIONS_SQL = `WITH ids AS (SELECT unnest($1::int[] || 0 || ARRAY(SELECT "downloadId" FROM "version"
    WHERE "id" = ANY($2::int[]))) AS id)
  SELECT t, sum(n)::text AS v FROM (
  SELECT "table_name" AS t, "version" AS n FROM "cache_versions"
  UNION ALL SELECT "table_name", count(*) FROM "cache_bumps" WHERE "download_id" IS NULL GROUP BY 1
  UNION ALL SELECT '', count(*) FROM "cache_bumps"
  UNION ALL SELECT '=' || "id", "downloadId" FROM "version" WHERE "id" = ANY($2::int[])
  UNION ALL SELECT c."table_name" || '@' || c."download_id", c."version" FROM "cache_download_versions" c
    WHERE c."download_id" IN (SELECT id FROM ids)
  UNION ALL SELECT b."table_name" || '@' || b."download_id", count(*) FROM "cache_bumps" b
    WHERE b."download_id" IN (SELECT id FROM ids) GROUP BY 1) x GROUP BY t ORDER BY t`;

/**
 * Moves the rows of cache_bumps into cache_versions and cache_download_versions in one statement (each sum is
 * unchanged). One instance at a time (a transaction-scoped advisory lock, tried: another compacting meanwhile makes
 * this one do nothing).
 */
export const COMPACT_SQL = `WITH l AS (SELECT pg_try_advisory_xact_lock(72640332) AS ok),
  moved AS (DELETE FROM "cache_bumps" WHERE (SELECT ok FROM l) RETURNING "table_name", "download_id"),
  d AS (INSERT INTO "cache_download_versions" AS c ("download_id", "table_name", "version", "changed_at")
    SELECT "download_id", "table_name", count(*), now() FROM moved WHERE "download_id" IS NOT NULL GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT ("download_id", "table_name") DO UPDATE SET "version" = c."version" + excluded."version",
      "changed_at" = excluded."changed_at")
  INSERT INTO "cache_versions" AS c ("table_name", "version")
  SELECT "table_name", count(*) FROM moved WHERE "download_id" IS NULL GROUP BY 1 ORDER BY 1
  ON CONFLICT ("table_name") DO UPDATE SET "version" = c."version" + excluded."version"`;

/** Rows of cache_download_versions past which PRUNE_SQL deletes the oldest, and how many it keeps. */
export const DOWNLOAD_VERSIONS_MAX = 20_000;
export const DOWNLOAD_VERSIONS_KEPT = 10_000;

/**
 * Keeps cache_download_versions bounded: past DOWNLOAD_VERSIONS_MAX rows, deletes the rows changed longest ago down to
 * DOWNLOAD_VERSIONS_KEPT and bumps PRUNED in the same statement (a deleted row's version restarts from 0). One
 * instance at a time, like COMPACT_SQL.
 */
export const PRUNE_SQL = `WITH l AS (SELECT pg_try_advisory_xact_lock(72640333) AS ok),
  n AS (SELECT CASE WHEN (SELECT ok FROM l) THEN count(*) ELSE 0 END AS n FROM "cache_download_versions"),
  old AS (SELECT "download_id", "table_name" FROM "cache_download_versions"
    WHERE (SELECT n FROM n) > ${DOWNLOAD_VERSIONS_MAX} ORDER BY "changed_at"
    LIMIT greatest((SELECT n FROM n) - ${DOWNLOAD_VERSIONS_KEPT}, 0)),
  gone AS (DELETE FROM "cache_download_versions" c USING old
    WHERE c."download_id" = old."download_id" AND c."table_name" = old."table_name" RETURNING 1)
  INSERT INTO "cache_versions" AS c ("table_name", "version")
  SELECT '${PRUNED}', 1 WHERE EXISTS (SELECT FROM gone)
  ON CONFLICT ("table_name") DO UPDATE SET "version" = c."version" + 1`;

/** The statement's rows as versions; `downloads`: those asked for (each of their names is present, 0 by default). */
export function versionsOf(rows: readonly { t: string; v: string }[], downloads: Iterable<number> = []): TableVersions {
  const of = new Map<string, string>();
  let pending = 0;
  let all = '';
  for (const r of rows) {
    if (r.t === '') pending = Number(r.v);
    else {
      of.set(r.t, r.v);
      if (!r.t.includes('@') && !r.t.startsWith('=')) all += `${r.t}=${r.v};`;
    }
  }
  const ids = new Set(downloads);
  ids.add(0);
  for (const r of rows) if (r.t.startsWith('=')) ids.add(Number(r.v));
  for (const id of ids) for (const k of downloadKeys(id)) if (!of.has(k)) of.set(k, '0');
  return { of, all, pending };
}

/** The tables (and views, were there any) of the schema, by name: what a statement may read. */
export const TABLES_SQL = `SELECT c.relname::text AS t FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
  WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND c.relname NOT IN ('_prisma_migrations', 'cache_versions', 'cache_bumps', 'cache_download_versions')`;

const STRING = /'(?:[^']|'')*'/g;
const IDENTIFIER = /"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)/g;
const WRITE =
  /^\s*(?:insert\s+into|update|delete\s+from)\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)(?:\s*\.\s*("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*))?/i;
const RETURNING = /\breturning\b/i;
const COUNT_STAR = /\bcount\s*\(\s*\*\s*\)/gi;
const MEMO_LIMIT = 5_000;

/**
 * Reads the tables a statement reads from its text: every identifier (outside string literals) that is the name of a
 * table of the schema, wherever it stands (FROM lists with commas, joins, subqueries, qualified column references), so
 * no grammar is relied on. An identifier that happens to equal a table name only adds a dependency (a miss, never a
 * stale answer). The target of an INSERT, UPDATE or DELETE without RETURNING is written, not read, unless it is named
 * again further on.
 */
export class StatementReader {
  private readonly tables: ReadonlySet<string>;
  private readonly memo = new Map<string, StatementReads>();

  constructor(tables: Iterable<string>) {
    this.tables = new Set(tables);
  }

  /** The tables `sql` reads (memoised: the service sends a small set of texts). */
  readsOf(sql: string | undefined): StatementReads {
    if (typeof sql !== 'string') return 'all';
    let reads = this.memo.get(sql);
    if (reads === undefined) {
      reads = this.parse(sql);
      if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
      this.memo.set(sql, reads);
    }
    return reads;
  }

  private parse(sql: string): StatementReads {
    const text = sql.replace(STRING, "''");
    let rest = text;
    const write = WRITE.exec(text);
    if (write && !RETURNING.test(text)) rest = text.slice(write[0].length);
    const tables = new Set<string>();
    for (const m of rest.matchAll(IDENTIFIER)) {
      const name = m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2]!.toLowerCase();
      if (this.tables.has(name)) tables.add(name);
    }
    const star = text.replace(COUNT_STAR, '').includes('*');
    const out: string[] = [];
    for (const t of tables) {
      out.push(t);
      const counters = COUNTER_COLUMNS[t];
      if (counters && (star || counters[0] === '*' || counters.some((c) => text.includes(`"${c}"`))))
        out.push(t + COUNTS);
    }
    return out;
  }
}

/** The reader of the schema `db` has now, as the read cache takes it. */
export async function statementReader(db: {
  query<R>(sql: string): Promise<R[]>;
}): Promise<(sql: string | undefined) => StatementReads> {
  const reader = new StatementReader((await db.query<{ t: string }>(TABLES_SQL)).map((r) => r.t));
  return (sql) => reader.readsOf(sql);
}
