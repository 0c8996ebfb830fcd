// List totals: how many rows a list's filters match, counted before the per-row permission check (src/db/lists.ts).
// Database triggers keep counter tables in the transaction of every write (prisma/migrations/*_list_totals), so a
// total is a sum over a few counter rows rather than a count(*) over every matching row, and it is exact: the counters
// are read in the same snapshot as the page. Filters the counters do not cover (`since`) fall back to a count(*).
//
// Each list's total is its module's (store.ts: downloadTotalSql, commentTotalSql, fileTotalSql, categoryTotalSql):
// a SQL scalar subquery, for a statement that reads the page and its total together, and through totalOf below a
// number, a statement of its own. Values are bound through `bind`, which answers a placeholder (`$n`); a `SqlRef`
// instead names a column of the enclosing statement (a parent id in src/db/child-pages.ts). Here: what they share.
import type { Prisma } from '../generated/prisma/client.js';
import { SqlRef, type Bind } from './filters.js';

/** A counter's key: a value bound as a parameter, or a column of the enclosing statement (SqlRef). */
export type Key = number | SqlRef;
/** The SQL of a counter's key, cast to `cast` when bound. */
export const keySql = (v: Key, bind: Bind, cast: string) => (v instanceof SqlRef ? v.sql : `${bind(v)}::${cast}`);

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
