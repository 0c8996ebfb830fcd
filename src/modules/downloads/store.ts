// The downloads' hand-written SQL reads, the hottest of the service: a download by id and a page of downloads, each
// with the category, current version and tags when the operation asks for them, one statement each, straight
// through the driver: Prisma's per-statement cost (query planning in WebAssembly, result mapping) was most of a
// request's time on these routes (bench/README.md). Writes, and reads these do not cover, stay with Prisma. Rows come
// back in Prisma's model shape (src/db/rows.ts), relations under Prisma's relation names, so Pothos resolves them as
// if Prisma had loaded them. Also the list's orders and total (from the counter tables, src/db/totals.ts), and
// downloads by id for the permission checks of rows read elsewhere.
// The list's filter (DOWNLOAD_FILTER) is described here once and compiled by src/db/filters.ts for the page list, the
// connections, the totals and the search statement (./search.ts).
import type { Category, Download, Version } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import { filterSql, type Bind, type CustomTerm, type FilterSpec } from '../../db/filters.js';
import { jsonOf, revive, type JsonRow } from '../../db/rows.js';
import { keySql, totalOf, type Key, type Runner } from '../../db/totals.js';
import { readByKey } from '../../db/shared-reads.js';

type Db = Pick<Database, 'query'>;

// ───────────── the list's filter

export interface DownloadFilter {
  categoryId?: number;
  /** null: downloads without a prefix. */
  prefixId?: number | null;
  state?: Download['state'];
  /** Downloads updated at or after this moment. */
  since?: Date;
  /** Downloads owned by this user. */
  userId?: number;
  /** Downloads carrying every one of these tags (normalized names). */
  tags?: string[];
  /** Downloads in one of these categories (a category and its subcategories, for search). */
  categoryIds?: number[];
}

/** Downloads carrying every tag of `names`: one EXISTS per tag, each answered by the (tagId) index. */
const ALL_TAGS: CustomTerm<DownloadFilter, string[]> = {
  key: 'tags',
  sql: (t, names, bind) =>
    names
      .map(
        (name) =>
          `EXISTS (SELECT 1 FROM download_tag ${t}_dt JOIN tag ${t}_tg ON ${t}_tg.id = ${t}_dt."tagId" WHERE ${t}_dt."downloadId" = ${t}.id AND ${t}_tg.name = ${bind(name)}::text)`,
      )
      .join(' AND ') || 'TRUE',
  where: (names) => ({ AND: names.map((name) => ({ tags: { some: { tag: { name } } } })) }),
};

/** Downloads in one of the categories `ids`. */
const IN_CATEGORIES: CustomTerm<DownloadFilter, number[]> = {
  key: 'categoryIds',
  sql: (t, ids, bind) => `${t}."categoryId" = ANY(${bind(ids)}::int[])`,
  where: (ids) => ({ categoryId: { in: ids } }),
};

export const DOWNLOAD_FILTER: FilterSpec<DownloadFilter> = [
  { key: 'categoryId', column: 'categoryId', type: 'int', op: 'equals' },
  { key: 'prefixId', column: 'prefixId', type: 'int', op: 'equals' },
  { key: 'state', column: 'state', type: '"DownloadState"', op: 'equals' },
  { key: 'since', column: 'lastUpdate', type: 'timestamp', op: 'atLeast' },
  { key: 'userId', column: 'userId', type: 'int', op: 'equals' },
  ALL_TAGS,
  IN_CATEGORIES,
];

// ───────────── relations a read loads with each download

/** The relations of a download these reads can load along with it. */
export interface DownloadRelations {
  category: boolean;
  currentVersion: boolean;
  /** The tag names (as `Download.tags` selects them: `{ tag: { name } }` per tag). */
  tags?: boolean;
}
export type DownloadRow = Download & {
  category?: Category;
  currentVersion?: Version | null;
  tags?: { tag: { name: string } }[];
};

/**
 * Whether `v` is the query argument `Download.tags` adds, the tag names only: `{ select: { tag: { select: { name: true } } } }`.
 * Walked rather than compared as JSON text: 0.12 µs where `JSON.stringify` took 1.24 (a loop on a slow machine), on
 * every download read.
 */
function isTagsSelection(v: unknown): boolean {
  const only = (o: unknown, key: string): unknown =>
    o !== null && typeof o === 'object' && Object.keys(o).length === 1
      ? (o as Record<string, unknown>)[key]
      : undefined;
  return only(only(only(only(v, 'select'), 'tag'), 'select'), 'name') === true;
}

/**
 * The relations a Pothos/Prisma query argument (`{}` or `{ include: { category: true, currentVersion: true } }`)
 * asks for, or null when it asks for more than these reads load (then the caller uses Prisma).
 */
export function downloadRelationsOf(
  query: { include?: Record<string, unknown>; select?: unknown } | undefined,
): DownloadRelations | null {
  if (!query || Object.keys(query).length === 0) return { category: false, currentVersion: false };
  if (query.select !== undefined || Object.keys(query).some((k) => k !== 'include')) return null;
  const include = query.include ?? {};
  for (const [k, v] of Object.entries(include)) {
    if (k === 'tags' ? !isTagsSelection(v) : (k !== 'category' && k !== 'currentVersion') || v !== true) return null;
  }
  return {
    category: include.category === true,
    currentVersion: include.currentVersion === true,
    tags: include.tags !== undefined,
  };
}

export const DOWNLOAD_ORDER_COLUMNS = ['createdDate', 'lastUpdate', 'downloadCount', 'viewCount', 'title'] as const;
export type DownloadOrderColumn = (typeof DOWNLOAD_ORDER_COLUMNS)[number];

// ───────────── the reads

/**
 * The statement of downloadById for each set of relations, built once: the same string object on every call, so the
 * maps that key on its text (the prepared statement's name, the read cache's tables read) find it by its cached hash
 * instead of hashing and comparing three kilobytes of SQL per read (built and looked up twice: 0.36 µs against 0.03,
 * in a loop on a slow machine).
 */
const byIdSql = new Map<number, string>();

/**
 * A download with the relations `rel` asks for; null when there is none. Through the database's shared reads when it
 * has them (an operation's database, not a transaction's): the downloads asked for by id in the same turn, by every
 * request then running, are read in one statement (src/db/shared-reads.ts).
 */
export async function downloadById(
  db: Db & Partial<Pick<Database, 'readShared'>>,
  id: number,
  rel: DownloadRelations,
): Promise<DownloadRow | null> {
  const shape = (rel.category ? 1 : 0) | (rel.currentVersion ? 2 : 0) | (rel.tags ? 4 : 0);
  let sql = byIdSql.get(shape);
  if (sql === undefined) {
    sql = `SELECT d.id AS k, ${jsonOf('Download', 'd')} AS d${relationColumns(rel)} FROM download d WHERE d.id = ANY($1::int[])`;
    byIdSql.set(shape, sql);
  }
  const row = await readByKey<JsonRow & { k: number }>(db, sql, id);
  return row ? downloadRow(row, rel) : null;
}

/** One page in the given order (ties broken by id in the same direction) and the number of matching rows. */
export async function downloadPage(
  db: Db,
  filter: DownloadFilter,
  order: { column: DownloadOrderColumn; direction: 'asc' | 'desc' },
  window: { skip: number; take: number },
  rel: DownloadRelations,
): Promise<{ total: number; rows: DownloadRow[] }> {
  if (!DOWNLOAD_ORDER_COLUMNS.includes(order.column)) throw new Error(`Not an order column: ${order.column}`);
  const dir = order.direction === 'asc' ? 'ASC' : 'DESC';
  const params: unknown[] = [];
  const where = whereOf(filter, params);
  // The total from the counters the database keeps (downloadTotalSql below), not a count over the matching rows.
  const total = downloadTotalSql(filter, (v) => {
    params.push(v);
    return `$${params.length}`;
  });
  params.push(window.take, window.skip);
  const orderBy = `ORDER BY d."${order.column}" ${dir}, d.id ${dir}`;
  // The page is cut in a subquery and the JSON built over its rows only: built in the same SELECT as the LIMIT,
  // every skipped row of the OFFSET had its JSON (and its category and version subqueries) built and thrown away
  // (page 25 of 100 rows with with=full: 269 ms instead of 23 ms on 50,000 downloads).
  const rows = await db.query<JsonRow>(
    `SELECT ${jsonOf('Download', 'd')} AS d${relationColumns(rel)}, ${total} AS total
       FROM (SELECT * FROM download d ${where} ${orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}) d ${orderBy}`,
    params,
  );
  if (rows.length > 0) return { total: Number(rows[0]!.total), rows: rows.map((r) => downloadRow(r, rel)) };
  // An empty page: the total rode on the rows, so it is asked for alone (nothing matches on page 1).
  if (window.skip === 0) return { total: 0, rows: [] };
  return { total: await downloadTotal(db, filter), rows: [] };
}

/** Downloads by id (those that exist), for permission checks on rows read elsewhere. */
export async function downloadsById(db: Db, ids: readonly number[]): Promise<Download[]> {
  const wanted = [...new Set(ids)].filter((id) => Number.isInteger(id));
  if (wanted.length === 0) return [];
  const rows = await db.query<{ d: Record<string, unknown> }>(
    `SELECT ${jsonOf('Download', 'd')} AS d FROM download d WHERE d.id = ANY(string_to_array($1, ',')::int[])`,
    [wanted.join(',')],
  );
  return rows.map((r) => revive<Download>('Download', r.d));
}

function relationColumns(rel: DownloadRelations): string {
  return (
    (rel.category ? `, (SELECT ${jsonOf('Category', 'c')} FROM category c WHERE c.id = d."categoryId") AS c` : '') +
    (rel.currentVersion
      ? `, (SELECT ${jsonOf('Version', 'v')} FROM version v WHERE v.id = d."currentVersionId") AS v`
      : '') +
    (rel.tags
      ? `, (SELECT coalesce(json_agg(g.name ORDER BY g.name), '[]'::json) FROM download_tag x JOIN tag g ON g.id = x."tagId" WHERE x."downloadId" = d.id) AS tg`
      : '')
  );
}

function downloadRow(r: JsonRow, rel: DownloadRelations): DownloadRow {
  const d = revive<DownloadRow>('Download', r.d);
  if (rel.category) d.category = revive<Category>('Category', r.c);
  if (rel.currentVersion) d.currentVersion = revive<Version | null>('Version', r.v ?? null);
  if (rel.tags) d.tags = (r.tg as string[]).map((name) => ({ tag: { name } }));
  return d;
}

function whereOf(f: DownloadFilter, params: unknown[]): string {
  const terms = filterSql(DOWNLOAD_FILTER, f, 'd', (v) => {
    params.push(v);
    return `$${params.length}`;
  });
  return terms.length ? `WHERE ${terms.join(' AND ')}` : '';
}

// ───────────── the list's total (src/db/totals.ts)

export interface DownloadTotalFilter extends Omit<DownloadFilter, 'categoryId'> {
  categoryId?: Key;
}

/** Downloads matching a download list's filter: from download_total, or a count(*) when `since` is set. */
export function downloadTotalSql(f: DownloadTotalFilter, bind: Bind): string {
  // The counters hold no dates, owners, tags or category sets: such a filter counts the matching rows.
  if (f.since !== undefined || f.userId !== undefined || f.tags !== undefined || f.categoryIds !== undefined)
    return `(SELECT count(*) FROM download x WHERE ${filterSql(DOWNLOAD_FILTER, f, 'x', bind).join(' AND ')})`;
  const terms: string[] = [];
  if (f.categoryId !== undefined) terms.push(`x."categoryId" = ${keySql(f.categoryId, bind, 'int')}`);
  if (f.prefixId !== undefined) terms.push(`x."prefixKey" = ${bind(f.prefixId ?? 0)}::int`);
  if (f.state !== undefined) terms.push(`x.state = ${bind(f.state)}::"DownloadState"`);
  return `(SELECT coalesce(sum(x.n), 0)::bigint FROM download_total x${terms.length ? ` WHERE ${terms.join(' AND ')}` : ''})`;
}

export const downloadTotal = (db: Runner, f: DownloadTotalFilter) => totalOf(db, (bind) => downloadTotalSql(f, bind));
