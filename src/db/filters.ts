// Each list's filter, described once as data (which filter key compares which column, how) and compiled from that one
// description to every read that lists the rows: the SQL of the page list and of the connections (each module's
// store.ts, src/db/child-pages.ts), the count behind a total (src/db/totals.ts), and the Prisma `where` of the reads
// Prisma makes. A filter key added to a description is honoured by all of them alike. The descriptions are their
// modules' (DOWNLOAD_FILTER in src/modules/downloads/store.ts, COMMENT_FILTER in src/modules/comments/store.ts).

/** Binds a value as a statement parameter and answers its placeholder ($n). */
export type Bind = (v: unknown) => string;

/** A column or expression of the enclosing statement, used as a filter value instead of a bound parameter. */
export class SqlRef {
  constructor(readonly sql: string) {}
}
export const sqlRef = (sql: string) => new SqlRef(sql);

/** One filter key: the column it compares, the column's SQL type, and the comparison. */
export interface ColumnTerm<F> {
  key: keyof F & string;
  /** The column's name, which is also the Prisma field's. */
  column: string;
  /** The SQL type the parameter is cast to. */
  type: 'int' | 'timestamp' | `"${string}"`;
  /** `equals`: the column equals the value, or IS NULL for a null value; `atLeast`: the column >= the value. */
  op: 'equals' | 'atLeast';
}

/** A filter key that is no comparison of a column (rows related through another table): its SQL and its Prisma where. */
export interface CustomTerm<F, V = never> {
  key: keyof F & string;
  sql(t: string, value: V, bind: Bind): string;
  where(value: V): object;
}

// biome-ignore lint/suspicious/noExplicitAny: each custom term states its own value type; the spec holds any of them
export type FilterTerm<F> = ColumnTerm<F> | CustomTerm<F, any>;
const isCustom = <F>(t: FilterTerm<F>): t is CustomTerm<F, unknown> => 'sql' in t;

export type FilterSpec<F> = readonly FilterTerm<F>[];

const sqlValue = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/**
 * The filter `f` as SQL terms over the table alias `t` (to be joined with AND; none for an empty filter). A value may
 * be a column of the enclosing statement (SqlRef) instead of a parameter.
 */
export function filterSql<F extends object>(
  spec: FilterSpec<F>,
  f: { [K in keyof F]?: F[K] | SqlRef },
  t: string,
  bind: Bind,
): string[] {
  const terms: string[] = [];
  for (const term of spec) {
    const v = f[term.key] as unknown;
    if (v === undefined) continue;
    if (isCustom(term)) {
      terms.push(term.sql(t, v, bind));
      continue;
    }
    const column = `${t}."${term.column}"`;
    // Timestamps are stored as UTC without a zone; an ISO string is read the same way.
    const op = term.op === 'atLeast' ? '>=' : '=';
    if (v === null) terms.push(`${column} IS NULL`);
    else if (v instanceof SqlRef) terms.push(`${column} ${op} ${v.sql}`);
    else terms.push(`${column} ${op} ${bind(sqlValue(v))}::${term.type}`);
  }
  return terms;
}

/** The filter `f` as a Prisma `where` (`W`: the model's where input). */
export function filterWhere<F extends object, W>(spec: FilterSpec<F>, f: F): W {
  const where: Record<string, unknown> = {};
  for (const term of spec) {
    const v = f[term.key] as unknown;
    if (v === undefined) continue;
    if (isCustom(term)) Object.assign(where, term.where(v));
    else where[term.column] = term.op === 'atLeast' && v !== null ? { gte: v } : v;
  }
  return where as W;
}

/**
 * The filter a Prisma `where` expresses, when it is one `spec` describes (each field compared as its term says), else
 * null: a read given such a `where` may take the SQL path (counters, hand-written statements) instead of Prisma.
 */
export function filterOfWhere<F extends object>(spec: FilterSpec<F>, where: object): F | null {
  const f: Record<string, unknown> = {};
  for (const [column, v] of Object.entries(where)) {
    if (v === undefined) continue;
    const term = spec.find((t) => !isCustom(t) && t.column === column) as ColumnTerm<F> | undefined;
    if (!term) return null;
    if (term.op === 'atLeast') {
      if (!v || typeof v !== 'object' || Object.keys(v).length !== 1 || !((v as { gte?: unknown }).gte instanceof Date))
        return null;
      f[term.key] = (v as { gte: Date }).gte;
    } else if (typeof v === 'number' || typeof v === 'string' || v === null) f[term.key] = v;
    else return null;
  }
  return f as F;
}
