// Hand-written SQL for the category, comment and file reads, as src/db/reads.ts does for downloads: a list is one
// statement (the parent the permission check needs, the page, and the total together), a get is one statement (the
// row and the parents its permission check needs). Both the page-numbered lists and the cursor connections read
// through here: a `Slice` is either an offset page or a keyset window. Rows come back in Prisma's model shapes
// (src/db/rows.ts) with the relations Prisma would have included, so the domain and Pothos treat them alike.
//
// Each list's total is one function of src/db/totals.ts (categoryTotalSql, commentTotalSql, fileTotalSql) returning
// a scalar subquery, which the statement carries beside the page.
import type { Category, Download, File, Version } from '../generated/prisma/client.js';
import type { Database } from './client.js';
import { jsonOf, revive, type JsonRow } from './rows.js';
import type { KeysetSpec, Window } from './keyset.js';
import { pageSql, type ListRead, type Slice } from './slices.js';
import { childPages, type ChildPage, type ChildSource } from './child-pages.js';
import { fileTotalSql } from './totals.js';

type Param = (v: unknown) => string;

export type { Slice } from './slices.js';

const int = (v: unknown) => Number(v);

// ───────────── filters (their totals come from src/db/totals.ts: categoryTotalSql, commentTotalSql, fileTotalSql)

export interface FileFilter {
  /** Files of this version only; every version's when absent. Soft-deleted files are never counted or listed. */
  versionId?: number;
}

function fileWhere(f: FileFilter, t: string, param: Param): string[] {
  const terms = [`${t}."isDeleted" = false`];
  if (f.versionId !== undefined) terms.push(`${t}."versionId" = ${param(f.versionId)}::int`);
  return terms;
}

// ───────────── relations a read loads besides the ones the permission checks need

export type FileRow = File & { version: Version & { download: Download } };
export type FileWithCategory = File & { version: Version & { download: Download & { category: Category } } };

type Query = { include?: Record<string, unknown>; select?: unknown; [k: string]: unknown } | undefined;

function includeOf(query: Query): Record<string, unknown> | null {
  if (!query || Object.keys(query).length === 0) return {};
  if (Object.keys(query).some((k) => k !== 'include')) return null;
  return query.include ?? {};
}

/** Whether these reads load what a query argument for files asks for (the version and its download are always loaded). */
export function fileQueryCovered(query: Query): boolean {
  const include = includeOf(query);
  return (
    include !== null &&
    Object.entries(include).every(
      ([k, v]) => k === 'version' && (v === true || JSON.stringify(v) === '{"include":{"download":true}}'),
    )
  );
}

/** Whether the visitor is on the team of download `d` (SQL over the download's id column); false for guests. */
const teamSql = (downloadId: string, userId: number, param: Param) =>
  userId === 0
    ? 'false'
    : `EXISTS (SELECT 1 FROM team_member tm WHERE tm."downloadId" = ${downloadId} AND tm."userId" = ${param(userId)}::int)`;

/** A file an update check found: the columns its rules read, its version whole, the download's permission columns. */
/**
 * A file an update check found: what deciding its visibility reads (its state and its version's and download's
 * permission columns), the hash asked for that it matched, and its version in full (the answer's `current`).
 */
export type UpdateCheckFile = Pick<File, 'id' | 'versionId' | 'validationStatus' | 'isDeleted'> & {
  /** The hash as asked for (algorithm prefix included) that this file matched. */
  matched: string;
  version: Version & { download: Download };
};
/** A file of a version's list, with what deciding its visibility reads (filesOfVersions). */
export interface VersionFile {
  file: File;
  versionState: Version['state'];
  /** The permission columns only. */
  download: Download;
}
const UPDATE_FILE_COLUMNS = ['id', 'versionId', 'validationStatus', 'isDeleted'] as const;

/** The columns of a download that permission checks read (src/permissions/access.ts), in the datamodel's order. */
const PERMISSION_COLUMNS = ['id', 'categoryId', 'userId', 'state'] as const;

export class ResourceReads {
  constructor(protected readonly db: Pick<Database, 'query'>) {}

  private async one(sql: string, params: unknown[]): Promise<JsonRow | null> {
    const rows = await this.db.query<JsonRow>(sql, params);
    return rows[0] ?? null;
  }

  /** One page of children for each parent, in one statement (the nested connections: src/db/child-pages.ts). */
  childPages<T>(
    source: ChildSource,
    spec: KeysetSpec,
    window: Window,
    parentIds: readonly number[],
  ): Promise<Map<number, ChildPage<T>>> {
    return childPages<T>(this.db, source, spec, window, parentIds);
  }

  /** Downloads by id (those that exist), for permission checks on rows read elsewhere. */
  async downloadsById(ids: readonly number[]): Promise<Download[]> {
    const wanted = [...new Set(ids)].filter((id) => Number.isInteger(id));
    if (wanted.length === 0) return [];
    const rows = await this.db.query<{ d: Record<string, unknown> }>(
      `SELECT ${jsonOf('Download', 'd')} AS d FROM download d WHERE d.id = ANY(string_to_array($1, ',')::int[])`,
      [wanted.join(',')],
    );
    return rows.map((r) => revive<Download>('Download', r.d));
  }

  /**
   * What one level of dependency resolution reads (src/modules/versions/resolve.ts), in one statement: the visible
   * versions of these downloads that list every `compat` value, and the downloads' permission columns (id,
   * categoryId, userId, state: what canDownload reads).
   */
  async resolutionCandidates(
    downloadIds: readonly number[],
    compat: readonly string[],
  ): Promise<{ versions: Version[]; downloads: Download[] }> {
    if (downloadIds.length === 0) return { versions: [], downloads: [] };
    const row = await this.one(
      `SELECT (SELECT coalesce(json_agg(${jsonOf('Version', 'v')}), '[]'::json) FROM version v
                WHERE v."downloadId" = ANY(string_to_array($1, ',')::int[]) AND v.state = 'visible'
                  AND v."compatibleWith" @> $2::text[]) AS v,
              (SELECT coalesce(json_agg(${jsonOf('Download', 'd', PERMISSION_COLUMNS)}), '[]'::json) FROM download d
                WHERE d.id = ANY(string_to_array($1, ',')::int[])) AS d`,
      [downloadIds.join(','), [...compat]],
    );
    return {
      versions: (row!.v as JsonRow[]).map((v) => revive<Version>('Version', v)),
      downloads: (row!.d as JsonRow[]).map((d) => revive<Download>('Download', d)),
    };
  }

  /**
   * What an update check reads (src/modules/versions/updates.ts), in one statement: the files that are not
   * soft-deleted holding one of these hashes (stored forms, `sha256:<hex>` …), newest first, each with its version
   * and its download's permission columns; and for every download among them the newest visible version (release
   * date, then id) in `channels` listing every `compat` value. The hashes are looked up through the fileHash, sha1
   * and sha512 indexes, joined with the lists unnested rather than compared with `= ANY(list)`: the planner then
   * estimates no per-element selectivity (500 hashes: about 30 ms of planning on a loaded machine, more than the
   * lookups); the newest versions come through the download/release-date index.
   */
  async updateCheck(
    hashes: { sha1: readonly string[]; sha256: readonly string[]; sha512: readonly string[] },
    channels: readonly string[],
    compat: readonly string[],
  ): Promise<{ files: UpdateCheckFile[]; latest: Version[] }> {
    const params: unknown[] = [[...channels], [...compat]];
    // A lookup per algorithm asked for: an empty list joined with a column most of whose values are '' (files stored
    // before sha1 and sha512 existed) is estimated at every file, and the plan reads the whole table.
    const lookups: string[] = [];
    for (const [list, column] of [
      [hashes.sha256, '"fileHash"'],
      [hashes.sha1, 'sha1'],
      [hashes.sha512, 'sha512'],
    ] as const) {
      if (list.length === 0) continue;
      params.push([...list]);
      lookups.push(`SELECT f.id, h.v FROM unnest($${params.length}::text[]) h(v) JOIN file f ON f.${column} = h.v`);
    }
    if (lookups.length === 0) return { files: [], latest: [] };
    const row = await this.one(
      `WITH ids AS (${lookups.join(' UNION ')}),
       f AS MATERIALIZED (
         SELECT f.*, ids.v AS matched, v."downloadId" AS "versionDownloadId"
         FROM ids JOIN file f ON f.id = ids.id JOIN version v ON v.id = f."versionId" WHERE NOT f."isDeleted")
       SELECT
         (SELECT coalesce(json_agg(json_build_object('f', ${jsonOf('File', 'f', UPDATE_FILE_COLUMNS)},
                   'h', f.matched, 'v', ${jsonOf('Version', 'v')}, 'd', ${jsonOf('Download', 'd', PERMISSION_COLUMNS)})
                   ORDER BY f.id DESC), '[]'::json)
            FROM f JOIN version v ON v.id = f."versionId" JOIN download d ON d.id = v."downloadId") AS files,
         (SELECT coalesce(json_agg(${jsonOf('Version', 'l')}), '[]'::json) FROM (
            SELECT DISTINCT ON (l."downloadId") l.* FROM version l
            WHERE l."downloadId" IN (SELECT "versionDownloadId" FROM f) AND l.state = 'visible'
              AND l.channel::text = ANY($1::text[]) AND l."compatibleWith" @> $2::text[]
            ORDER BY l."downloadId", l."releaseDate" DESC, l.id DESC) l) AS latest`,
      params,
    );
    return {
      files: (row!.files as JsonRow[]).map((x) => {
        const f = revive<UpdateCheckFile>('File', x.f);
        f.matched = x.h as string;
        const version = revive<Version & { download: Download }>('Version', x.v);
        version.download = revive<Download>('Download', x.d);
        f.version = version;
        return f;
      }),
      latest: (row!.latest as JsonRow[]).map((v) => revive<Version>('Version', v)),
    };
  }

  /**
   * The first `first` files of each version in `versionIds` that is not deleted (the primary file first, then by
   * displayOrder), each with its version's state and its download's permission columns, in one statement: an update
   * check lists the files of up to 500 versions. The files carry no relations (a field that asks for one loads it).
   */
  async filesOfVersions(versionIds: readonly number[], first: number): Promise<VersionFile[]> {
    if (versionIds.length === 0) return [];
    const row = await this.one(
      `SELECT coalesce(json_agg(json_build_object('f', ${jsonOf('File', 'f')}, 's', v.state,
                'd', ${jsonOf('Download', 'd', PERMISSION_COLUMNS)}) ORDER BY f."versionId", f.rn), '[]'::json) AS rows
       FROM (SELECT f.*, row_number() OVER (PARTITION BY f."versionId"
                ORDER BY f."isPrimary" DESC, f."displayOrder", f.id) AS rn
             FROM file f WHERE f."versionId" = ANY($1::int[]) AND NOT f."isDeleted") f
       JOIN version v ON v.id = f."versionId" JOIN download d ON d.id = v."downloadId"
       WHERE f.rn <= $2::int`,
      [[...versionIds], first],
    );
    return (row!.rows as JsonRow[]).map((x) => ({
      file: revive<File>('File', x.f),
      versionState: x.s as Version['state'],
      download: revive<Download>('Download', x.d),
    }));
  }

  /**
   * A file with its version, download and category, and whether `userId` is on the download's team; null when
   * there is none.
   */
  async file(id: number, userId: number): Promise<{ file: FileWithCategory; isTeamMember: boolean } | null> {
    const params: unknown[] = [id];
    const param: Param = (v) => {
      params.push(v);
      return `$${params.length}`;
    };
    const r = await this.one(
      `SELECT ${jsonOf('File', 'f')} AS f, ${jsonOf('Version', 'v')} AS v, ${jsonOf('Download', 'd')} AS d, ${jsonOf('Category', 'c')} AS c,
         ${teamSql('d.id', userId, param)} AS team
       FROM file f JOIN version v ON v.id = f."versionId" JOIN download d ON d.id = v."downloadId" JOIN category c ON c.id = d."categoryId"
       WHERE f.id = $1::int`,
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
  async filePage(
    filter: FileFilter,
    slice: Slice,
    userId: number,
  ): Promise<ListRead<FileRow, Version & { download: Download }> & { isTeamMember: boolean }> {
    const params: unknown[] = [];
    const param: Param = (v) => {
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
    const r = (await this.one(
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
      total: int(r.total),
      rows,
      isTeamMember: r.parent?.team === true,
    };
  }
}
