// The versions' hand-written SQL reads, each one statement however many rows it answers for: one level of dependency
// resolution (the candidate versions of the downloads it names, and those downloads' permission columns), an update
// check (the files holding the hashes, with their versions, and each download's newest matching version), and the
// first files of many versions (Version.files in an update check's answer). Rows come back in Prisma's model shapes
// (src/db/rows.ts).
import type { Download, File, Version } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import { firstRow, jsonOf, revive, type JsonRow } from '../../db/rows.js';
import { DOWNLOAD_PERMISSION_COLUMNS } from '../../permissions/access.js';

type Db = Pick<Database, 'query'>;

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

/**
 * What one level of dependency resolution reads (resolve.ts), in one statement: the visible
 * versions of these downloads that list every `compat` value, and the downloads' permission columns (id,
 * categoryId, userId, state: what canDownload reads).
 */
export async function resolutionCandidates(
  db: Db,
  downloadIds: readonly number[],
  compat: readonly string[],
): Promise<{ versions: Version[]; downloads: Download[] }> {
  if (downloadIds.length === 0) return { versions: [], downloads: [] };
  const row = await firstRow(
    db,
    `SELECT (SELECT coalesce(json_agg(${jsonOf('Version', 'v')}), '[]'::json) FROM version v
                WHERE v."downloadId" = ANY(string_to_array($1, ',')::int[]) AND v.state = 'visible'
                  AND v."compatibleWith" @> $2::text[]) AS v,
              (SELECT coalesce(json_agg(${jsonOf('Download', 'd', DOWNLOAD_PERMISSION_COLUMNS)}), '[]'::json) FROM download d
                WHERE d.id = ANY(string_to_array($1, ',')::int[])) AS d`,
    [downloadIds.join(','), [...compat]],
  );
  return {
    versions: (row!.v as JsonRow[]).map((v) => revive<Version>('Version', v)),
    downloads: (row!.d as JsonRow[]).map((d) => revive<Download>('Download', d)),
  };
}

/**
 * What an update check reads (updates.ts), in one statement: the files that are not
 * soft-deleted holding one of these hashes (stored forms, `sha256:<hex>` …), newest first, each with its version
 * and its download's permission columns; and for every download among them the newest visible version (release
 * date, then id) in `channels` listing every `compat` value. The hashes are looked up through the fileHash, sha1
 * and sha512 indexes, joined with the lists unnested rather than compared with `= ANY(list)`: the planner then
 * estimates no per-element selectivity (500 hashes: about 30 ms of planning on a loaded machine, more than the
 * lookups); the newest versions come through the download/release-date index.
 */
export async function updateCheck(
  db: Db,
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
  const row = await firstRow(
    db,
    `WITH ids AS (${lookups.join(' UNION ')}),
       f AS MATERIALIZED (
         SELECT f.*, ids.v AS matched, v."downloadId" AS "versionDownloadId"
         FROM ids JOIN file f ON f.id = ids.id JOIN version v ON v.id = f."versionId" WHERE NOT f."isDeleted")
       SELECT
         (SELECT coalesce(json_agg(json_build_object('f', ${jsonOf('File', 'f', UPDATE_FILE_COLUMNS)},
                   'h', f.matched, 'v', ${jsonOf('Version', 'v')}, 'd', ${jsonOf('Download', 'd', DOWNLOAD_PERMISSION_COLUMNS)})
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
export async function filesOfVersions(db: Db, versionIds: readonly number[], first: number): Promise<VersionFile[]> {
  if (versionIds.length === 0) return [];
  const row = await firstRow(
    db,
    `SELECT coalesce(json_agg(json_build_object('f', ${jsonOf('File', 'f')}, 's', v.state,
                'd', ${jsonOf('Download', 'd', DOWNLOAD_PERMISSION_COLUMNS)}) ORDER BY f."versionId", f.rn), '[]'::json) AS rows
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
