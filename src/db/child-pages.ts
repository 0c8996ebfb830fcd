// One page of children for each of many parents, in one SQL statement: the comments of 20 downloads, the files of
// the versions of a page, and so on. Each parent gets its own keyset page (LATERAL … ORDER BY … LIMIT, which walks
// the (parent, order column, id) indexes) and its own count, so nested connections cost one statement per field
// whatever the number of parents and the page size.
import type { Database } from './client.js';
import { jsonOf, revive } from './rows.js';
import { sqlAfter, sqlOrderBy, type KeysetSpec, type Window } from './keyset.js';

export interface ChildSource {
  /** A table (`comment`, `"user"`) or a parenthesised subquery; read under the alias `t`. It must have an `id`. */
  from: string;
  /** The column of `from` naming the parent row. */
  parent: string;
  /** The Prisma model whose shape the rows take (src/db/rows.ts). */
  model: string;
  /** DateTime columns of `from` beyond the model's own (a subquery's extra columns). */
  dates?: string[];
  /** Conditions over `t` besides the parent, each bound through `param` (which answers `$n`). */
  where?: (param: (v: unknown) => string) => string[];
  /**
   * The number of the parent's children matching the conditions, as a scalar SQL expression over `parent` (the
   * parent id's column), e.g. a list's total from its counters (commentTotalSql…); default: a count(*) over them.
   */
  total?: (parent: string, param: (v: unknown) => string) => string;
}

export interface ChildPage<T> {
  /** Children of the parent matching the conditions, before any keyset or page limit. */
  total: number;
  /** Up to `window.size + 1` children after the window's cursor, in scan order. */
  rows: T[];
}

/**
 * Pages of the children of `parentIds`, keyed by parent id, in one statement straight through the driver. Rows come
 * back in Prisma's shape for `source.model` (src/db/rows.ts), so the schema resolves them like rows Prisma read.
 */
export async function childPages<T>(
  db: Pick<Database, 'query'>,
  source: ChildSource,
  spec: KeysetSpec,
  window: Window,
  parentIds: readonly number[],
): Promise<Map<number, ChildPage<T>>> {
  const pages = new Map<number, ChildPage<T>>();
  const ids = [...new Set(parentIds)].filter((id) => Number.isInteger(id));
  if (ids.length === 0) return pages;
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const parents = param(ids.join(','));
  const filter = [`t."${source.parent}" = p.id`, ...(source.where?.(param) ?? [])].join(' AND ');
  const total = source.total
    ? `${source.total('p.id', param)}::int`
    : `(SELECT count(*)::int FROM ${source.from} t WHERE ${filter})`;
  const after = sqlAfter(spec, window, 't', param);
  const limit = param(window.size + 1);
  const rows = await db.query<{ parent: number; total: number; x: Record<string, unknown> | null }>(
    `SELECT p.id AS parent, n.total, CASE WHEN x.id IS NULL THEN NULL ELSE ${jsonOf(source.model, 'x')} END AS x
     FROM unnest(string_to_array(${parents}, ',')::int[]) AS p(id)
     CROSS JOIN LATERAL (SELECT ${total} AS total) n
     LEFT JOIN LATERAL (
       SELECT t.* FROM ${source.from} t WHERE ${filter} AND ${after} ORDER BY ${sqlOrderBy(spec, window, 't')} LIMIT ${limit}::int
     ) x ON TRUE
     ORDER BY p.id, ${sqlOrderBy(spec, window, 'x')}`,
    params,
  );
  for (const r of rows) {
    const parent = Number(r.parent);
    let page = pages.get(parent);
    if (!page) {
      page = { total: Number(r.total), rows: [] };
      pages.set(parent, page);
    }
    if (r.x === null) continue;
    const row = revive<Record<string, unknown>>(source.model, r.x);
    for (const f of source.dates ?? []) if (typeof row[f] === 'string') row[f] = new Date(`${row[f]}Z`);
    page.rows.push(row as T);
  }
  return pages;
}
