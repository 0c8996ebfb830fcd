// A realistic catalogue for the benchmarks, written with set-based SQL (seconds, not minutes):
// 200 categories three levels deep, 1,000 users, 50,000 downloads (one current version each), 100,000 files,
// 200,000 comments, three extra groups with per-category permission overrides.
import type { Database } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { bootstrap } from '../src/db/bootstrap.js';

export interface SeedSize { users: number; downloads: number; filesPerDownload: number; commentsPerDownload: number }
export const FULL_SIZE: SeedSize = { users: 1000, downloads: 50_000, filesPerDownload: 2, commentsPerDownload: 4 };

export interface SeedResult { categories: number; topCategory: number; leafCategory: number; downloadId: number; versionId: number; commentDownloadId: number }

export async function seed(db: Database, bootstrapKey: string, size: SeedSize = FULL_SIZE): Promise<SeedResult> {
  await migrate(db);
  await bootstrap(db, bootstrapKey);
  await db.session(async (s) => {
    const q = (sql: string) => s.exec(sql);
    await q(`INSERT INTO "user" (username, "primaryGroupId")
             SELECT 'user' || g, (SELECT id FROM user_group WHERE name = 'registered') FROM generate_series(1, ${size.users}) g`);
    // 10 top-level, 40 second-level, 150 third-level categories
    await q(`INSERT INTO category (title, "displayOrder") SELECT 'Top ' || g, g FROM generate_series(1, 10) g`);
    await q(`INSERT INTO category ("parentId", title, "displayOrder")
             SELECT 1 + (g % 10), 'Mid ' || g, g FROM generate_series(1, 40) g`);
    await q(`INSERT INTO category ("parentId", title, "displayOrder")
             SELECT 11 + (g % 40), 'Leaf ' || g, g FROM generate_series(1, 150) g`);
    await q(`INSERT INTO user_group (name, title) VALUES ('vip', 'VIP'), ('testers', 'Testers'), ('authors', 'Authors')`);
    await q(`INSERT INTO group_permission ("groupId", permission)
             SELECT g.id, p FROM user_group g, unnest(ARRAY['view','viewComments','download','add','comment']) p
             WHERE g.name IN ('vip','testers','authors')`);
    await q(`INSERT INTO user_group_membership ("userId", "groupId")
             SELECT u.id, (SELECT id FROM user_group WHERE name = (ARRAY['vip','testers','authors'])[1 + u.id % 3])
             FROM "user" u WHERE u.id % 4 = 0`);
    // overrides: registered may not add in every 5th category, guests cannot view every 20th, VIPs may in all of them
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'registered'), 'add', 'deny' FROM category c WHERE c.id % 5 = 0`);
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'guest'), 'view', 'deny' FROM category c WHERE c.id % 20 = 0`);
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'vip'), 'add', 'allow' FROM category c WHERE c.id % 5 = 0`);
    await q(`INSERT INTO download ("categoryId", "userId", title, "tagLine", description, "downloadCount", "viewCount",
                                   "lastUpdate", "createdDate", state)
             SELECT 1 + (g % 200), 1 + (g % ${size.users}), 'Download ' || g, 'Tag line ' || g,
                    'A [b]description[/b] for download ' || g, (g * 7919) % 10000, (g::bigint * 104729) % 100000,
                    now() - (g || ' minutes')::interval, now() - ((g * 2) || ' minutes')::interval,
                    (CASE WHEN g % 50 = 0 THEN 'moderated' WHEN g % 97 = 0 THEN 'deleted' ELSE 'visible' END)::"DownloadState"
             FROM generate_series(1, ${size.downloads}) g`);
    await q(`INSERT INTO version ("downloadId", "versionString") SELECT id, '1.0.' || id FROM download`);
    await q(`UPDATE download d SET "currentVersionId" = v.id FROM version v WHERE v."downloadId" = d.id`);
    await q(`INSERT INTO file ("versionId", filename, "fileSize", "fileHash", "mimeType", "isPrimary", "validationStatus",
                               "displayOrder", "downloadCount", "storageKey")
             SELECT v.id, 'file-' || v.id || '-' || n || '.zip', 1000 * n + v.id, 'sha256:' || md5(v.id || ':' || n) || md5(n || ':' || v.id),
                    'application/zip', n = 1, 'passed', n, (v.id * n) % 500, 'bench/' || v.id || '/' || n
             FROM version v, generate_series(1, ${size.filesPerDownload}) n`);
    await q(`INSERT INTO comment ("downloadId", "userId", "commentDate", message, state)
             SELECT d.id, 1 + ((d.id + n) % ${size.users}), now() - ((d.id + n) || ' minutes')::interval,
                    'Comment ' || n || ' on download ' || d.id,
                    (CASE WHEN n = 4 AND d.id % 10 = 0 THEN 'moderated' ELSE 'visible' END)::"CommentState"
             FROM download d, generate_series(1, ${size.commentsPerDownload}) n`);
    await q(`UPDATE category c SET "downloadCount" = (SELECT count(*) FROM download d WHERE d."categoryId" = c.id AND d.state = 'visible')`);
    await q(`ANALYZE`);
  });
  const one = async (sql: string) => (await db.session((s) => s.query<{ id: number }>(sql)))[0]!.id;
  return {
    categories: 200,
    topCategory: 1,
    leafCategory: await one(`SELECT id FROM category WHERE "parentId" IS NOT NULL AND id > 50 AND id % 20 <> 0 ORDER BY id LIMIT 1`),
    downloadId: await one(`SELECT id FROM download WHERE state = 'visible' AND "categoryId" % 20 <> 0 ORDER BY id LIMIT 1 OFFSET 100`),
    versionId: await one(`SELECT v.id FROM version v JOIN download d ON d.id = v."downloadId" WHERE d.state = 'visible' AND d."categoryId" % 20 <> 0 ORDER BY v.id LIMIT 1 OFFSET 100`),
    commentDownloadId: await one(`SELECT id FROM download WHERE state = 'visible' AND "categoryId" % 20 <> 0 ORDER BY id LIMIT 1 OFFSET 200`),
  };
}
