// The comments' hand-written SQL reads: a comment with its download (and author as asked for) in one statement, and
// a list in one statement (the download the permission check needs as the parent, the page, and the total
// together). Rows come back in Prisma's model shapes (src/db/rows.ts) with the relations Prisma would have included,
// so the rules and Pothos treat them alike. Also the list's filter, described once (COMMENT_FILTER: the page, the
// nested connections, the total and the Prisma `where` compile it, src/db/filters.ts), and its total from the
// counter tables (src/db/totals.ts).
import type { Comment, Download, Prisma, User } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import { filterOfWhere, filterSql, sqlRef, type Bind, type FilterSpec } from '../../db/filters.js';
import { firstRow, includeOf, jsonOf, revive, type JsonRow, type PrismaQuery } from '../../db/rows.js';
import { pageSql, type ListRead, type Slice } from '../../db/slices.js';
import { readByKey } from '../../db/shared-reads.js';
import { totalOf, type Key, type Runner } from '../../db/totals.js';
import { DOWNLOAD_PERMISSION_COLUMNS } from '../../permissions/access.js';

type Db = Pick<Database, 'query'>;

// ───────────── the list's filter

export interface CommentFilter {
  /** Comments of this download only; every download's when absent. */
  downloadId?: number;
  /** Comments in this state only; every state when absent. */
  state?: Comment['state'];
  /** Comments posted at or after this moment. */
  since?: Date;
}

export const COMMENT_FILTER: FilterSpec<CommentFilter> = [
  { key: 'downloadId', column: 'downloadId', type: 'int', op: 'equals' },
  { key: 'state', column: 'state', type: '"CommentState"', op: 'equals' },
  { key: 'since', column: 'commentDate', type: 'timestamp', op: 'atLeast' },
];

function commentWhere(f: CommentTotalFilter, t: string, param: Bind): string[] {
  return ['TRUE', ...filterSql(COMMENT_FILTER, f, t, param)];
}

// ───────────── relations a read loads besides the ones the permission checks need

/** A comment's author as an operation asks for it: the whole row, only the username, or not at all. */
export type CommentUser = 'row' | 'username' | null;
export type CommentRow = Comment & { download: Download; user?: User | { username: string } };

/**
 * What a Pothos/Prisma query argument for comments asks to load with each comment (the download is always loaded),
 * or null when it asks for more than these reads load (then the caller uses Prisma).
 */
export function commentRelationsOf(query: PrismaQuery): { user: CommentUser } | null {
  const include = includeOf(query);
  if (!include) return null;
  let user: CommentUser = null;
  for (const [k, v] of Object.entries(include)) {
    if (k === 'download' && v === true) continue;
    if (k !== 'user') return null;
    if (v === true) user = 'row';
    else if (JSON.stringify(v) === '{"select":{"username":true}}') user = 'username';
    else return null;
  }
  return { user };
}

/**
 * Whether a query argument for comments selects their download (the `download` field): without it the download is
 * read only for the permission checks, so its permission columns (DOWNLOAD_PERMISSION_COLUMNS) are enough.
 */
export function commentDownloadOf(query: PrismaQuery): boolean {
  return includeOf(query)?.download === true;
}

const userSql = (user: CommentUser, t: string): string => {
  if (user === 'row') return `(SELECT ${jsonOf('User', 'u')} FROM "user" u WHERE u.id = ${t}."userId")`;
  if (user === 'username')
    return `(SELECT json_build_object('username', u.username) FROM "user" u WHERE u.id = ${t}."userId")`;
  return 'NULL';
};

function commentRow(r: JsonRow, user: CommentUser, download: Download | undefined): CommentRow {
  const c = revive<CommentRow>('Comment', r.c);
  c.download = download ?? revive<Download>('Download', r.d);
  if (user === 'row') c.user = revive<User>('User', r.u);
  else if (user === 'username') c.user = r.u;
  return c;
}

// ───────────── the reads

/**
 * A comment with its download (and author as asked for); null when there is none. Read with the comments asked for
 * by id at the same moment, when `db` shares reads (src/db/shared-reads.ts).
 */
export async function commentById(
  db: Db & Partial<Pick<Database, 'readShared'>>,
  id: number,
  user: CommentUser,
): Promise<CommentRow | null> {
  const r = await readByKey<JsonRow & { k: number }>(
    db,
    `SELECT t.id AS k, ${jsonOf('Comment', 't')} AS c, ${jsonOf('Download', 'd')} AS d, ${userSql(user, 't')} AS u
       FROM comment t JOIN download d ON d.id = t."downloadId" WHERE t.id = ANY($1::int[])`,
    id,
  );
  return r ? commentRow(r, user, undefined) : null;
}

/**
 * A page of comments, each with its download, and with `filter.downloadId` that download as the parent. Unless
 * `wholeDownload`, the download holds only the columns the permission checks read (typed as a whole row: the
 * caller resolves no field that reads another).
 */
export async function commentPage(
  db: Db & Partial<Pick<Database, 'readShared'>>,
  filter: CommentFilter,
  slice: Slice,
  user: CommentUser,
  wholeDownload = true,
): Promise<ListRead<CommentRow, Download>> {
  const byParent = filter.downloadId !== undefined;
  // One download's page through the database's shared reads when it has them: the pages of the same shape (filter,
  // slice, author) asked for at the same moment, of any downloads, are read in one statement whose download ids are
  // its first parameter, each page beside its own id (`q.k`); src/db/shared-reads.ts.
  const shared = byParent && db.readShared !== undefined;
  const params: unknown[] = [];
  const param: Bind = (v) => {
    params.push(v);
    return `$${params.length + (shared ? 1 : 0)}`;
  };
  const f: CommentTotalFilter = shared ? { ...filter, downloadId: sqlRef('q.k') } : filter;
  const downloadJson = jsonOf('Download', 'd', wholeDownload ? undefined : DOWNLOAD_PERMISSION_COLUMNS);
  const parent = byParent
    ? `(SELECT ${downloadJson} FROM download d WHERE d.id = ${shared ? 'q.k' : `${param(filter.downloadId)}::int`})`
    : 'NULL';
  // Every row of a download's list has that download: it is read once, as the parent.
  const download = byParent ? '' : `, 'd', (SELECT ${downloadJson} FROM download d WHERE d.id = t."downloadId")`;
  const rowJson = `json_build_object('c', ${jsonOf('Comment', 't')}, 'u', ${userSql(user, 't')}${download})`;
  const select = `SELECT ${parent} AS parent, ${commentTotalSql(f, param)} AS total, ${pageSql('comment', commentWhere(f, 't', param), rowJson, slice, param)} AS rows`;
  const r = shared
    ? (await db.readShared!<JsonRow & { k: number }>(
        `SELECT q.k AS k, s.parent, s.total, s.rows FROM unnest($1::int[]) AS q(k) CROSS JOIN LATERAL (${select}) s`,
        filter.downloadId!,
        params,
      ))!
    : (await firstRow(db, select, params))!;
  const parentRow = byParent ? revive<Download | null>('Download', r.parent ?? null) : undefined;
  const rows = (r.rows as JsonRow[]).map((x) => commentRow(x, user, parentRow ?? undefined));
  return { ...(byParent ? { parent: parentRow } : {}), total: Number(r.total), rows };
}

// ───────────── the list's total (src/db/totals.ts)

export interface CommentTotalFilter extends Omit<CommentFilter, 'downloadId'> {
  downloadId?: Key;
}

/** Comments matching a comment list's filter: from comment_total(_all), or a count(*) when `since` is set. */
export function commentTotalSql(f: CommentTotalFilter, bind: Bind): string {
  const terms = filterSql(COMMENT_FILTER, f, 'x', bind);
  // The counters hold no dates: a `since` filter counts the matching rows.
  if (f.since !== undefined) return `(SELECT count(*) FROM comment x WHERE ${terms.join(' AND ')})`;
  const table = f.downloadId !== undefined ? 'comment_total' : 'comment_total_all';
  return `(SELECT coalesce(sum(x.n), 0)::bigint FROM ${table} x${terms.length ? ` WHERE ${terms.join(' AND ')}` : ''})`;
}

export const commentTotal = (db: Runner, f: CommentTotalFilter) => totalOf(db, (bind) => commentTotalSql(f, bind));

/**
 * The filter of a comment list's Prisma `where` (rules.ts commentListWhere), or null when it holds a condition the
 * counters do not know (then the caller counts with Prisma).
 */
export function commentFilterOf(where: Prisma.CommentWhereInput): CommentTotalFilter | null {
  return filterOfWhere(COMMENT_FILTER, where);
}

/** comment.count({ where }), from the counters when they cover the filter. */
export async function countComments(
  prisma: Runner & Pick<Prisma.TransactionClient, 'comment'>,
  where: Prisma.CommentWhereInput,
): Promise<number> {
  const f = commentFilterOf(where);
  return f ? commentTotal(prisma, f) : prisma.comment.count({ where });
}
