// List totals: how many rows a list's filters match, counted before the per-row permission check (src/db/lists.ts).
// Database triggers keep counter tables in the transaction of every write (prisma/migrations/*_list_totals), so a
// total is a sum over a few counter rows rather than a count(*) over every matching row, and it is exact: the counters
// are read in the same snapshot as the page. Filters the counters do not cover (`since`) fall back to a count(*).
//
// Each total comes as a SQL scalar subquery (for a statement that reads the page and its total together) and as a
// number (a statement of its own). Values are bound through `bind`, which answers a placeholder (`$n`); a `SqlRef`
// instead names a column of the enclosing statement (a parent id in src/db/child-pages.ts).
import type { Prisma } from '../generated/prisma/client.js';
import { DOWNLOAD_FILTER, filterSql, SqlRef, type Bind, type DownloadFilter } from './filters.js';

export { sqlRef, SqlRef, type Bind } from './filters.js';

/** A counter's key: a value bound as a parameter, or a column of the enclosing statement (SqlRef). */
export type Key = number | SqlRef;
/** The SQL of a counter's key, cast to `cast` when bound. */
export const keySql = (v: Key, bind: Bind, cast: string) => (v instanceof SqlRef ? v.sql : `${bind(v)}::${cast}`);
const val = keySql;

/** Anything that runs one statement with `$n` parameters: Prisma (`$queryRawUnsafe`) or the driver (`query`). */
export type Runner =
  | Pick<Prisma.TransactionClient, '$queryRawUnsafe'>
  | { query<R>(sql: string, params?: unknown[]): Promise<R[]> };

/** A total's scalar subquery run as a statement of its own: `SELECT <sql> AS total`, its values bound in order. */
export async function totalOf(db: Runner, sql: (bind: Bind) => string): Promise<number> {
  const params: unknown[] = [];
  const text = `SELECT ${sql((v) => {
    params.push(v);
    return `$${params.length}`;
  })} AS total`;
  const rows =
    'query' in db
      ? await db.query<{ total: unknown }>(text, params)
      : await db.$queryRawUnsafe<{ total: unknown }[]>(text, ...params);
  return Number(rows[0]!.total);
}
const scalar = totalOf;

// ───────────── downloads

export interface DownloadTotalFilter extends Omit<DownloadFilter, 'categoryId'> {
  categoryId?: Key;
}

/** Downloads matching a download list's filter: from download_total, or a count(*) when `since` is set. */
export function downloadTotalSql(f: DownloadTotalFilter, bind: Bind): string {
  // The counters hold no dates, owners, tags or category sets: such a filter counts the matching rows.
  if (f.since !== undefined || f.userId !== undefined || f.tags !== undefined || f.categoryIds !== undefined)
    return `(SELECT count(*) FROM download x WHERE ${filterSql(DOWNLOAD_FILTER, f, 'x', bind).join(' AND ')})`;
  const terms: string[] = [];
  if (f.categoryId !== undefined) terms.push(`x."categoryId" = ${val(f.categoryId, bind, 'int')}`);
  if (f.prefixId !== undefined) terms.push(`x."prefixKey" = ${bind(f.prefixId ?? 0)}::int`);
  if (f.state !== undefined) terms.push(`x.state = ${bind(f.state)}::"DownloadState"`);
  return `(SELECT coalesce(sum(x.n), 0)::bigint FROM download_total x${terms.length ? ` WHERE ${terms.join(' AND ')}` : ''})`;
}

export const downloadTotal = (db: Runner, f: DownloadTotalFilter) => scalar(db, (bind) => downloadTotalSql(f, bind));
