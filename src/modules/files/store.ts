// The files' hand-written SQL reads: a file with its version, download and category (and whether the visitor is on
// the download's team) in one statement, and a list in one statement (the version the permission check needs as the
// parent, the page, and the total together). Rows come back in Prisma's model shapes (src/db/rows.ts) with the
// relations Prisma would have included, so the rules and Pothos treat them alike. Also the list's filter and its
// total from the counter tables (src/db/totals.ts).
import type { Category, Download, File, Prisma, Version } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import type { Bind } from '../../db/filters.js';
import { firstRow, includeOf, jsonOf, revive, type JsonRow, type PrismaQuery } from '../../db/rows.js';
import { pageSql, type ListRead, type Slice } from '../../db/slices.js';
import { keySql, totalOf, type Key, type Runner } from '../../db/totals.js';
import { readByKey } from '../../db/shared-reads.js';

type Db = Pick<Database, 'query'>;

// ───────────── the list's filter

export interface FileFilter {
  /** Files of this version only; every version's when absent. Soft-deleted files are never counted or listed. */
  versionId?: number;
}

function fileWhere(f: FileFilter, t: string, param: Bind): string[] {
  const terms = [`${t}."isDeleted" = false`];
  if (f.versionId !== undefined) terms.push(`${t}."versionId" = ${param(f.versionId)}::int`);
  return terms;
}

// ───────────── relations: the version and its download are always loaded (the permission checks read them)

export type FileRow = File & { version: Version & { download: Download } };
export type FileWithCategory = File & { version: Version & { download: Download & { category: Category } } };

/** Whether these reads load what a query argument for files asks for (the version and its download are always loaded). */
export function fileQueryCovered(query: PrismaQuery): boolean {
  const include = includeOf(query);
  return (
    include !== null &&
    Object.entries(include).every(
      ([k, v]) => k === 'version' && (v === true || JSON.stringify(v) === '{"include":{"download":true}}'),
    )
  );
}

/** Whether the visitor is on the team of download `d` (SQL over the download's id column); false for guests. */
const teamSql = (downloadId: string, userId: number, param: Bind) =>
  userId === 0
    ? 'false'
    : `EXISTS (SELECT 1 FROM team_member tm WHERE tm."downloadId" = ${downloadId} AND tm."userId" = ${param(userId)}::int)`;

// ───────────── the reads

/**
 * A file with its version, download and category, and whether `userId` is on the download's team; null when
 * there is none.
 */
export async function fileById(
  db: Db & Partial<Pick<Database, 'readShared'>>,
  id: number,
  userId: number,
): Promise<{ file: FileWithCategory; isTeamMember: boolean } | null> {
  // The ids are $1 (read with the files asked for by id at the same moment, src/db/shared-reads.ts); the rest follow.
  const params: unknown[] = [];
  const param: Bind = (v) => {
    params.push(v);
    return `$${params.length + 1}`;
  };
  const r = await readByKey<JsonRow & { k: number }>(
    db,
    `SELECT f.id AS k, ${jsonOf('File', 'f')} AS f, ${jsonOf('Version', 'v')} AS v, ${jsonOf('Download', 'd')} AS d, ${jsonOf('Category', 'c')} AS c,
         ${teamSql('d.id', userId, param)} AS team
       FROM file f JOIN version v ON v.id = f."versionId" JOIN download d ON d.id = v."downloadId" JOIN category c ON c.id = d."categoryId"
       WHERE f.id = ANY($1::int[])`,
    id,
    params,
  );
  if (!r) return null;
  const file = revive<FileWithCategory>('File', r.f);
  file.version = Object.assign(revive<Version>('Version', r.v), {
    download: Object.assign(revive<Download>('Download', r.d), { category: revive<Category>('Category', r.c) }),
  });
  return { file, isTeamMember: r.team === true };
}

/**
 * A page of files, each with its version and the version's download; with `filter.versionId` that version (with
 * its download) as the parent, and whether `userId` is on the download's team.
 */
export async function filePage(
  db: Db,
  filter: FileFilter,
  slice: Slice,
  userId: number,
): Promise<ListRead<FileRow, Version & { download: Download }> & { isTeamMember: boolean }> {
  const params: unknown[] = [];
  const param: Bind = (v) => {
    params.push(v);
    return `$${params.length}`;
  };
  const byParent = filter.versionId !== undefined;
  const parent = byParent
    ? `(SELECT json_build_object('v', ${jsonOf('Version', 'v')}, 'd', ${jsonOf('Download', 'd')}, 'team', ${teamSql('d.id', userId, param)})
          FROM version v JOIN download d ON d.id = v."downloadId" WHERE v.id = ${param(filter.versionId)}::int)`
    : 'NULL';
  const parents = byParent
    ? ''
    : `, 'v', (SELECT json_build_object('v', ${jsonOf('Version', 'v')}, 'd', ${jsonOf('Download', 'd')})
      FROM version v JOIN download d ON d.id = v."downloadId" WHERE v.id = t."versionId")`;
  const rowJson = `json_build_object('f', ${jsonOf('File', 't')}${parents})`;
  const r = (await firstRow(
    db,
    `SELECT ${parent} AS parent, ${fileTotalSql(filter, param)} AS total, ${pageSql('file', fileWhere(filter, 't', param), rowJson, slice, param)} AS rows`,
    params,
  ))!;
  const versionOf = (x: { v: unknown; d: unknown }) =>
    Object.assign(revive<Version>('Version', x.v as never), { download: revive<Download>('Download', x.d as never) });
  const parentRow = byParent && r.parent ? versionOf(r.parent) : null;
  const rows = (r.rows as JsonRow[]).map((x) =>
    Object.assign(revive<File>('File', x.f), { version: parentRow ?? versionOf(x.v) }),
  );
  return {
    ...(byParent ? { parent: parentRow } : {}),
    total: Number(r.total),
    rows,
    isTeamMember: r.parent?.team === true,
  };
}

// ───────────── the list's total (src/db/totals.ts)

/** Files listed are never soft-deleted ones; `versionId` undefined: every version. */
export interface FileTotalFilter {
  versionId?: Key;
}

/** Files that are not soft-deleted (of one version): from file_total(_all). */
export function fileTotalSql(f: FileTotalFilter, bind: Bind): string {
  return f.versionId !== undefined
    ? `(SELECT coalesce(sum(x.n), 0)::bigint FROM file_total x WHERE x."versionId" = ${keySql(f.versionId, bind, 'int')})`
    : `(SELECT coalesce(sum(x.n), 0)::bigint FROM file_total_all x)`;
}

export const fileTotal = (db: Runner, f: FileTotalFilter) => totalOf(db, (bind) => fileTotalSql(f, bind));

/** The filter of a file list's Prisma `where` (rules.ts fileListWhere), or null when the counters do not cover it. */
export function fileFilterOf(where: Prisma.FileWhereInput): FileTotalFilter | null {
  if (where.isDeleted !== false) return null;
  const f: FileTotalFilter = {};
  for (const [k, v] of Object.entries(where)) {
    if (v === undefined || k === 'isDeleted') continue;
    if (k === 'versionId' && typeof v === 'number') f.versionId = v;
    else return null;
  }
  return f;
}

/** file.count({ where }), from the counters when they cover the filter. */
export async function countFiles(
  prisma: Runner & Pick<Prisma.TransactionClient, 'file'>,
  where: Prisma.FileWhereInput,
): Promise<number> {
  const f = fileFilterOf(where);
  return f ? fileTotal(prisma, f) : prisma.file.count({ where });
}
