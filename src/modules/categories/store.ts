// The categories' hand-written SQL reads: a category (with its parent) in one statement, and a page of categories
// with the list's total in one statement (only the columns the operation's fields read). Rows come back in Prisma's
// model shape (src/db/rows.ts), the parent under Prisma's relation name, so Pothos resolves them as if Prisma had
// loaded them. Every category is listed (the permission check is the caller's), so the list has no filter, and its
// total is a count(*) over the table: a few hundred rows at most (no counter table).
import type { Category } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import type { Bind } from '../../db/filters.js';
import { columnsOf, firstRow, includeOf, jsonOf, revive, type JsonRow, type PrismaQuery } from '../../db/rows.js';
import { pageSql, type ListRead, type Slice } from '../../db/slices.js';
import { readByKey } from '../../db/shared-reads.js';

type Db = Pick<Database, 'query'>;

export type CategoryRow = Category & { parent?: Category | null };

/** Whether a query argument for categories asks for the parent category (the only relation categories load). */
export function categoryParentOf(query: PrismaQuery): boolean {
  return Boolean(includeOf(query)?.parent);
}

/**
 * What a list of categories reads: the parent category of each row when `parent`; only `columns` of each row (in
 * the datamodel's order) when given, every column otherwise.
 */
export interface CategoryRead {
  parent?: boolean;
  columns?: readonly string[];
}

// Category fields of the GraphQL schema that read other columns than their own name (or none): the rest are
// exposed columns of the same name. `id` is always read (the permission check and the URLs use it), `parentId` too
// (the `parent` field starts from it).
const CATEGORY_FIELD_COLUMNS: Record<string, readonly string[]> = {
  categoryId: [],
  parentCategoryId: [],
  viewUrl: [],
  canAddDownload: [],
  id: [],
  __typename: [],
  parent: [],
  children: [],
  downloads: [],
};

/**
 * The read a list of categories needs for the fields `fields` selected on each row (src/graphql/selected-fields.ts):
 * the columns those fields read and the parent when `parent` is selected. A field this table does not know reads
 * every column, so a field added to the schema can only cost columns, never lose them.
 */
export function categoryReadOf(fields: ReadonlySet<string> | null): CategoryRead {
  if (!fields) return {};
  const all = columnsOf('Category');
  const wanted = new Set(['id', 'parentId']);
  for (const f of fields) {
    if (CATEGORY_FIELD_COLUMNS[f]) for (const c of CATEGORY_FIELD_COLUMNS[f]) wanted.add(c);
    else if (all.includes(f)) wanted.add(f);
    else return { parent: fields.has('parent') };
  }
  return { parent: fields.has('parent'), columns: all.filter((c) => wanted.has(c)) };
}

const categoryJson = (t: string, parent: boolean, columns?: readonly string[]) =>
  parent
    ? `json_build_object('c', ${jsonOf('Category', t, columns)}, 'p', (SELECT ${jsonOf('Category', 'p')} FROM category p WHERE p.id = ${t}."parentId"))`
    : jsonOf('Category', t, columns);

function categoryRow(r: JsonRow, parent: boolean): CategoryRow {
  if (!parent) return revive<Category>('Category', r);
  return Object.assign(revive<Category>('Category', r.c), { parent: revive<Category | null>('Category', r.p ?? null) });
}

/** The statement of categoryById, with and without the parent, built once. */
const byIdSql = (parent: boolean) =>
  `SELECT c.id AS k, ${categoryJson('c', parent)} AS c FROM category c WHERE c.id = ANY($1::int[])`;
const BY_ID = [byIdSql(false), byIdSql(true)] as const;

/**
 * A category, with its parent category when `parent` (null at the top); null when there is none. Read with the
 * categories asked for by id at the same moment, when `db` shares reads (src/db/shared-reads.ts).
 */
export async function categoryById(
  db: Db & Partial<Pick<Database, 'readShared'>>,
  id: number,
  parent = false,
): Promise<CategoryRow | null> {
  const r = await readByKey<JsonRow & { k: number }>(db, BY_ID[parent ? 1 : 0], id);
  return r ? categoryRow(r.c as JsonRow, parent) : null;
}

/**
 * A page of categories, each with its parent category when `read.parent`, and the list's total. With `read.columns`
 * the rows hold only those columns (typed as whole rows: the caller resolves no field that reads another).
 */
export async function categoryPage(
  db: Db,
  slice: Slice,
  { parent = false, columns }: CategoryRead = {},
): Promise<ListRead<CategoryRow, never>> {
  const params: unknown[] = [];
  const param: Bind = (v) => {
    params.push(v);
    return `$${params.length}`;
  };
  const r = (await firstRow(
    db,
    `SELECT ${categoryTotalSql()} AS total, ${pageSql('category', ['TRUE'], categoryJson('t', parent, columns), slice, param)} AS rows`,
    params,
  ))!;
  return { total: Number(r.total), rows: (r.rows as JsonRow[]).map((c) => categoryRow(c, parent)) };
}

/** Every category: a few hundred rows at most, so a count(*) over the table (no counter table). */
export function categoryTotalSql(): string {
  return `(SELECT count(*) FROM category x)`;
}
