// A realistic catalogue for the benchmarks, written with set-based SQL (seconds, not minutes): 200 categories three
// levels deep, three extra groups with per-category permission overrides, and per download one current version,
// 2 files and 4 comments, with a user for every 50 downloads (50,000 downloads by default: 1,000 users, 100,000
// files, 200,000 comments). `grow` adds downloads to a seeded catalogue (same rules, same anchor time), so one
// database can be measured at two sizes. Every expression is safe up to 5,000,000 downloads and beyond: the row
// number `g` goes through bigint where it is multiplied, and times are the anchor minus whole minutes.
import type { Database } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { bootstrap } from '../src/modules/accounts/bootstrap.js';

export interface SeedSize {
  users: number;
  downloads: number;
  filesPerDownload: number;
  commentsPerDownload: number;
}

/** The catalogue for a number of downloads: 2 files and 4 comments per download, a user per 50 (at least 100). */
export function sizeFor(downloads: number): SeedSize {
  return { users: Math.max(100, Math.round(downloads / 50)), downloads, filesPerDownload: 2, commentsPerDownload: 4 };
}
export const FULL_SIZE: SeedSize = sizeFor(50_000);

export interface SeedResult {
  categories: number;
  topCategory: number;
  leafCategory: number;
  downloadId: number;
  versionId: number;
  commentDownloadId: number;
  /** The time every seeded timestamp counts back from (ISO, UTC), kept for `grow`. */
  anchor: string;
  size: SeedSize;
}

export async function seed(db: Database, bootstrapKey: string, size: SeedSize = FULL_SIZE): Promise<SeedResult> {
  await migrate(db);
  await bootstrap(db, bootstrapKey);
  await db.session(async (s) => {
    const q = (sql: string) => s.exec(sql);
    // 10 top-level, 40 second-level, 150 third-level categories
    await q(`INSERT INTO category (title, "displayOrder") SELECT 'Top ' || g, g FROM generate_series(1, 10) g`);
    await q(`INSERT INTO category ("parentId", title, "displayOrder")
             SELECT 1 + (g % 10), 'Mid ' || g, g FROM generate_series(1, 40) g`);
    await q(`INSERT INTO category ("parentId", title, "displayOrder")
             SELECT 11 + (g % 40), 'Leaf ' || g, g FROM generate_series(1, 150) g`);
    await q(
      `INSERT INTO user_group (name, title) VALUES ('vip', 'VIP'), ('testers', 'Testers'), ('authors', 'Authors')`,
    );
    await q(`INSERT INTO group_permission ("groupId", permission)
             SELECT g.id, p FROM user_group g, unnest(ARRAY['view','viewComments','download','add','comment']) p
             WHERE g.name IN ('vip','testers','authors')`);
    // overrides: registered may not add in every 5th category, guests cannot view every 20th, VIPs may in all of them
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'registered'), 'add', 'deny' FROM category c WHERE c.id % 5 = 0`);
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'guest'), 'view', 'deny' FROM category c WHERE c.id % 20 = 0`);
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'vip'), 'add', 'allow' FROM category c WHERE c.id % 5 = 0`);
  });
  const anchor = new Date().toISOString();
  await grow(db, { anchor, size: { ...size, users: 0, downloads: 0 } }, size);
  const one = async (sql: string) => (await db.session((s) => s.query<{ id: number }>(sql)))[0]!.id;
  return {
    categories: 200,
    topCategory: 1,
    leafCategory: await one(
      `SELECT id FROM category WHERE "parentId" IS NOT NULL AND id > 50 AND id % 20 <> 0 ORDER BY id LIMIT 1`,
    ),
    downloadId: await one(
      `SELECT id FROM download WHERE state = 'visible' AND "categoryId" % 20 <> 0 ORDER BY id LIMIT 1 OFFSET 100`,
    ),
    versionId: await one(
      `SELECT v.id FROM version v JOIN download d ON d.id = v."downloadId" WHERE d.state = 'visible' AND d."categoryId" % 20 <> 0 ORDER BY v.id LIMIT 1 OFFSET 100`,
    ),
    commentDownloadId: await one(
      `SELECT id FROM download WHERE state = 'visible' AND "categoryId" % 20 <> 0 ORDER BY id LIMIT 1 OFFSET 200`,
    ),
    anchor,
    size,
  };
}

/**
 * Grows a seeded catalogue from `from.size` to `to`: the users and downloads numbered after the ones there (with
 * their versions, files and comments, by the same rules as `seed`), then the derived counts and ANALYZE.
 */
export async function grow(db: Database, from: Pick<SeedResult, 'anchor' | 'size'>, to: SeedSize): Promise<void> {
  const { users: u0, downloads: d0 } = from.size;
  if (to.downloads < d0 || to.users < u0)
    throw new Error(`A catalogue grows: ${d0} downloads cannot become ${to.downloads}.`);
  const anchor = `('${new Date(from.anchor).toISOString()}'::timestamptz AT TIME ZONE 'UTC')`;
  await db.session(async (s) => {
    const q = (sql: string) => s.exec(sql);
    const max = async (table: string) =>
      Number((await s.query<{ n: string | null }>(`SELECT max(id)::text AS n FROM ${table}`))[0]!.n ?? 0);
    const [user0, download0, version0] = [await max('"user"'), await max('download'), await max('version')];
    // Bulk load as pg_restore does: the secondary indexes and foreign keys of the tables filled here are dropped and
    // made again afterwards from their definitions in the catalogue, so they come back exactly as the migrations
    // made them (and each foreign key is checked once over the whole table instead of row by row).
    const big = `('download', 'version', 'file', 'comment')`;
    const indexes = await s.query<{ name: string; def: string }>(
      `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
       WHERE i.schemaname = current_schema() AND i.tablename IN ${big}
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.contype IN ('p', 'u', 'x'))`,
    );
    const foreignKeys = await s.query<{ tbl: string; name: string; def: string }>(
      `SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE contype = 'f' AND conrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname IN ${big})`,
    );
    for (const fk of foreignKeys) await q(`ALTER TABLE ${fk.tbl} DROP CONSTRAINT "${fk.name}"`);
    for (const { name } of indexes) await q(`DROP INDEX "${name}"`);
    await q(`INSERT INTO "user" (username, "primaryGroupId")
             SELECT 'user' || g, (SELECT id FROM user_group WHERE name = 'registered') FROM generate_series(${u0 + 1}, ${to.users}) g`);
    await q(`INSERT INTO user_group_membership ("userId", "groupId")
             SELECT u.id, (SELECT id FROM user_group WHERE name = (ARRAY['vip','testers','authors'])[1 + u.id % 3])
             FROM "user" u WHERE u.id > ${user0} AND u.id % 4 = 0`);
    // Authors are the seeded users 1 … to.users (ids follow the sequence from 1 on a fresh database).
    await q(`INSERT INTO download ("categoryId", "userId", title, "tagLine", description, "downloadCount", "viewCount",
                                   "lastUpdate", "createdDate", state)
             SELECT 1 + (g % 200), 1 + (g % ${to.users}), 'Download ' || g, 'Tag line ' || g,
                    'A [b]description[/b] for download ' || g, (g * 7919) % 10000, (g * 104729) % 100000,
                    ${anchor} - g * interval '1 minute', ${anchor} - g * 2 * interval '1 minute',
                    (CASE WHEN g % 50 = 0 THEN 'moderated' WHEN g % 97 = 0 THEN 'deleted' ELSE 'visible' END)::"DownloadState"
             FROM generate_series(${d0 + 1}::bigint, ${to.downloads}::bigint) g`);
    await q(
      `INSERT INTO version ("downloadId", "versionString") SELECT id, '1.0.' || id FROM download WHERE id > ${download0}`,
    );
    await q(
      `UPDATE download d SET "currentVersionId" = v.id FROM version v WHERE v."downloadId" = d.id AND v.id > ${version0}`,
    );
    await q(`INSERT INTO file ("versionId", filename, "fileSize", "fileHash", "mimeType", "isPrimary", "validationStatus",
                               "displayOrder", "downloadCount", "storageKey")
             SELECT v.id, 'file-' || v.id || '-' || n || '.zip', 1000 * n + v.id::bigint, 'sha256:' || md5(v.id || ':' || n) || md5(n || ':' || v.id),
                    'application/zip', n = 1, 'passed', n, (v.id::bigint * n) % 500, 'bench/' || v.id || '/' || n
             FROM version v, generate_series(1, ${to.filesPerDownload}) n WHERE v.id > ${version0}`);
    await q(`INSERT INTO comment ("downloadId", "userId", "commentDate", message, state)
             SELECT d.id, 1 + ((d.id::bigint + n) % ${to.users}), ${anchor} - (d.id::bigint + n) * interval '1 minute',
                    'Comment ' || n || ' on download ' || d.id,
                    (CASE WHEN n = 4 AND d.id % 10 = 0 THEN 'moderated' ELSE 'visible' END)::"CommentState"
             FROM download d, generate_series(1, ${to.commentsPerDownload}) n WHERE d.id > ${download0}`);
    for (const { def } of indexes) await q(def);
    for (const fk of foreignKeys) await q(`ALTER TABLE ${fk.tbl} ADD CONSTRAINT "${fk.name}" ${fk.def}`);
    await refreshDerived(q);
    // The state of a catalogue in use: vacuumed (the update above left a dead row per download) and analyzed.
    await q(`VACUUM ANALYZE`);
    // And written out: otherwise the checkpointer writes the gigabytes just loaded while the first scenarios run
    // (in one run the two measured first after growing lost a third of their throughput, the peer's later ones none).
    await q(`CHECKPOINT`).catch(() => {}); // needs a superuser or pg_checkpoint: without it, measured as before
  });
}

/** Counts the service keeps beside the rows in its own writes, recomputed after set-based inserts (counts the database keeps with triggers, such as the list totals, follow by themselves). */
async function refreshDerived(q: (sql: string) => Promise<unknown>): Promise<void> {
  await q(
    `UPDATE category c SET "downloadCount" = (SELECT count(*) FROM download d WHERE d."categoryId" = c.id AND d.state = 'visible')`,
  );
}
