// A slice of a list read by hand-written SQL (each module's store.ts): `take` rows in a keyset order, after `skip`
// rows (page-numbered lists) or after a cursor (connections, which may also scan backward), cut in a subquery and
// turned into one JSON array, so that a statement carries the page beside its total and its parent row.
import type { Bind } from './filters.js';
import { sqlAfter, sqlOrderBy, type KeysetSpec, type Window } from './keyset.js';

/**
 * Which rows of a list to read and in which order: `take` rows in the order of `spec` (ties by id), after `skip`
 * rows (page-numbered lists) or after the cursor of `window` (connections, which may also scan backward).
 */
export interface Slice {
  spec: KeysetSpec;
  window?: Window;
  skip?: number;
  take: number;
}

/** What a list read answers: its rows, its total, and the parent row it names (when it names one). */
export interface ListRead<T, P> {
  /** The parent row the list names (null when it does not exist); undefined when the list names none. */
  parent?: P | null;
  total: number;
  rows: T[];
}

const FORWARD: Window = { size: 0, backward: false, cursor: null };

function sliceSql(slice: Slice, t: string, param: Bind): { after: string; orderBy: string; limit: string } {
  const w = slice.window ?? FORWARD;
  if (!/^[A-Za-z]+$/.test(slice.spec.column.name)) throw new Error(`Not an order column: ${slice.spec.column.name}`);
  const after = sqlAfter(slice.spec, w, t, param);
  const limit = `LIMIT ${param(slice.take)}::int OFFSET ${param(slice.skip ?? 0)}::bigint`;
  return { after, orderBy: sqlOrderBy(slice.spec, w, t), limit };
}

/** The JSON array of `rowJson` over the slice of `from` (alias t) matching `where`, in the slice's order. */
export function pageSql(from: string, where: string[], rowJson: string, slice: Slice, param: Bind): string {
  const { after, orderBy, limit } = sliceSql(slice, 't', param);
  return `(SELECT coalesce(json_agg(${rowJson} ORDER BY ${orderBy}), '[]'::json)
    FROM (SELECT * FROM ${from} t WHERE ${[...where, after].join(' AND ')} ORDER BY ${orderBy} ${limit}) t)`;
}
