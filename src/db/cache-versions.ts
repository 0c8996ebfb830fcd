// Table versions for the read cache (src/http/read-cache.ts), kept by the database (migration
// 20270110000000_cache_versions): every write statement on a table, whoever sends it, adds a row to "cache_bumps" in
// its own transaction, so a table's version (its "cache_versions" row plus its rows in "cache_bumps") changes exactly
// when a write to it commits. An update that changes only counter columns (COUNTER_COLUMNS) bumps "<table>#counts"
// instead of the table.
//
// What a cached answer read is taken from the SQL its operation sent (readsOf): the tables named after FROM, JOIN,
// UPDATE, INTO and USING, and, for each table with counters, whether the statement names one of them (or `*`). A
// statement that cannot be read (no text) makes the answer depend on every table.
//
// Limits of reading SQL this way, which the schema keeps true (test/read-cache.test.ts checks the catalogue): every
// table has the triggers; there are no views; the functions of the schema read no table (they are trigger functions
// and IMMUTABLE text functions). A name after FROM that is not a table (a CTE, `extract(x FROM y)`) only adds a
// dependency that never changes. A write without RETURNING (an UPDATE that stamps a key's use) reads nothing back:
// its target is not a dependency, the tables it reads from are.

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

/** The versions of the tables now: by name ("download", "download#counts"), and all of them as one text. */
export interface TableVersions {
  of: ReadonlyMap<string, string>;
  /** Changes whenever any version does. */
  all: string;
  /** Rows waiting in cache_bumps (compaction moves them into cache_versions). */
  pending: number;
}

/** What one statement read: tables (and "<table>#counts" for those whose counters it names), or everything. */
export type StatementReads = readonly string[] | 'all';

/** One statement: the versions, and the rows waiting in cache_bumps (table name ''). */
export const VERSIONS_SQL = `SELECT t, sum(n)::text AS v FROM (
  SELECT "table_name" AS t, "version" AS n FROM "cache_versions"
  UNION ALL SELECT "table_name", count(*) FROM "cache_bumps" GROUP BY 1
  UNION ALL SELECT '', count(*) FROM "cache_bumps") x GROUP BY t ORDER BY t`;

/**
 * Moves the rows of cache_bumps into cache_versions in one statement (each table's sum is unchanged). One instance at
 * a time (a transaction-scoped advisory lock, tried: another compacting meanwhile makes this one do nothing).
 */
export const COMPACT_SQL = `WITH l AS (SELECT pg_try_advisory_xact_lock(72640332) AS ok),
  moved AS (DELETE FROM "cache_bumps" WHERE (SELECT ok FROM l) RETURNING "table_name")
  INSERT INTO "cache_versions" AS c ("table_name", "version")
  SELECT "table_name", count(*) FROM moved GROUP BY 1 ORDER BY 1
  ON CONFLICT ("table_name") DO UPDATE SET "version" = c."version" + excluded."version"`;

export function versionsOf(rows: readonly { t: string; v: string }[]): TableVersions {
  const of = new Map<string, string>();
  let pending = 0;
  let all = '';
  for (const r of rows) {
    if (r.t === '') pending = Number(r.v);
    else {
      of.set(r.t, r.v);
      all += `${r.t}=${r.v};`;
    }
  }
  return { of, all, pending };
}

const NAME = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const TABLE = new RegExp(String.raw`\b(from|join|update|into|using)\s+(${NAME}(?:\s*\.\s*${NAME})?)(\s*\()?`, 'gi');
const WRITE = /^\s*(insert|update|delete)\b/i;
const RETURNING = /\breturning\b/i;
const STAR = /\*/;
const COUNT_STAR = /\bcount\s*\(\s*\*\s*\)/gi;

const memo = new Map<string, StatementReads>();
const MEMO_LIMIT = 5_000;

/** The tables `sql` reads (memoised: the service sends a small set of texts). */
export function readsOf(sql: string | undefined): StatementReads {
  if (typeof sql !== 'string') return 'all';
  let reads = memo.get(sql);
  if (reads === undefined) {
    reads = parse(sql);
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(sql, reads);
  }
  return reads;
}

const LAST_NAME = new RegExp(`${NAME}$`);

/** The table of a (possibly schema-qualified, possibly quoted) name, as PostgreSQL folds it. */
function unquote(name: string): string {
  const last = LAST_NAME.exec(name)![0];
  return last.startsWith('"') ? last.slice(1, -1).replaceAll('""', '"') : last.toLowerCase();
}

function parse(sql: string): StatementReads {
  const write = WRITE.exec(sql);
  const returning = RETURNING.test(sql);
  const tables = new Set<string>();
  let first = true;
  for (const m of sql.matchAll(TABLE)) {
    const target = first && write;
    first = false;
    // A function call (FROM unnest(…)): the schema's functions read no table. INTO t (columns) is a table.
    if (m[3] && m[1]!.toLowerCase() !== 'into') continue;
    // The target of a write with no RETURNING: written, not read.
    if (target && !returning) continue;
    tables.add(unquote(m[2]!));
  }
  const star = STAR.test(sql.replace(COUNT_STAR, ''));
  const out: string[] = [];
  for (const t of tables) {
    out.push(t);
    const counters = COUNTER_COLUMNS[t];
    if (counters && (star || counters[0] === '*' || counters.some((c) => sql.includes(`"${c}"`)))) out.push(t + COUNTS);
  }
  return out;
}
