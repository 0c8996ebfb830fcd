// A counted download writes the read cache's version bumps itself and marks its statement so that its tables' version
// triggers skip their comparison of the rows (migration 20270201000000_counted_download_bumps). The rows it writes
// must be those the triggers write for the same update, and the mark must reach no other statement.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countFileDownload } from '../src/modules/files/index.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

/** The same update as a counted download's, unmarked: its bumps are the triggers'. */
const PLAIN_COUNT = `WITH "f" AS (UPDATE "file" SET "downloadCount" = "downloadCount" + 1 WHERE "id" = $1::int RETURNING 1),
    "v" AS (UPDATE "version" SET "downloadCount" = "downloadCount" + 1 WHERE "id" = $2::int RETURNING 1),
    "d" AS (UPDATE "download" SET "downloadCount" = "downloadCount" + 1 WHERE "id" = $3::int RETURNING 1)
  INSERT INTO "download_daily_stats" ("downloadId", "day", "downloads")
  SELECT $3::int, (now() AT TIME ZONE 'UTC')::date, 1 FROM "d"
  ON CONFLICT ("downloadId", "day") DO UPDATE SET "downloads" = "download_daily_stats"."downloads" + 1`;

/** Bumps of the tables a count writes (other writers, such as a job, may add bumps of their own meanwhile). */
const BUMPS = `SELECT "table_name" AS t, "download_id" AS d FROM "cache_bumps"
  WHERE split_part("table_name", '#', 1) IN ('file', 'version', 'download', 'download_daily_stats')
  ORDER BY 1, 2 NULLS FIRST`;

forEachDatabase((kind) => {
  let t: TestApp;
  let file: { id: number; versionId: number; version: { downloadId: number } };
  let categoryId: number;
  const bumps = () => t.app.db.query<{ t: string; d: number | null }>(BUMPS);
  const counters = async () =>
    (
      await t.app.db.query<{ f: number; v: number; d: number; s: number }>(
        `SELECT (SELECT "downloadCount" FROM "file" WHERE "id" = $1) AS f,
           (SELECT "downloadCount" FROM "version" WHERE "id" = $2) AS v,
           (SELECT "downloadCount" FROM "download" WHERE "id" = $3) AS d,
           (SELECT sum("downloads")::int FROM "download_daily_stats" WHERE "downloadId" = $3) AS s`,
        [file.id, file.versionId, file.version.downloadId],
      )
    )[0]!;

  beforeAll(async () => {
    t = await startTestApp(kind);
    const u = await t.user('counter');
    categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Counted' } })).body.category
      .category_id;
    const created = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: u.key,
      form: { category_id: categoryId, title: 'Counted download' },
    });
    const versionId = created.body.download.current_version_id as number;
    const form = new FormData();
    form.append('version_id', String(versionId));
    form.append('file', new Blob([new Uint8Array(Buffer.from('counted bytes'))]), 'counted.txt');
    const res = await fetch(`${t.url}/api/mc-dm-files/`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': u.key },
      body: form,
    });
    const fileId = ((await res.json()) as { file: { file_id: number } }).file.file_id;
    file = { id: fileId, versionId, version: { downloadId: created.body.download.download_id as number } };
  });
  afterAll(() => t?.close());

  it('writes the bumps its tables’ triggers write for the same update, and counts as that update does', async () => {
    await t.app.db.compactCacheVersions();
    expect(await bumps()).toEqual([]);
    const before = await counters();
    await countFileDownload(t.app.db, file);
    const own = await bumps();
    const after = await counters();
    expect(after).toEqual({ f: before.f + 1, v: before.v + 1, d: before.d + 1, s: (before.s ?? 0) + 1 });

    await t.app.db.compactCacheVersions();
    expect(await bumps()).toEqual([]);
    await t.app.db.query(PLAIN_COUNT, [file.id, file.versionId, file.version.downloadId]);
    const triggers = await bumps();
    expect(await counters()).toEqual({ f: after.f + 1, v: after.v + 1, d: after.d + 1, s: after.s + 1 });

    expect(own).toEqual(triggers);
    const dl = file.version.downloadId;
    expect(own).toEqual([
      { t: 'download#counts', d: null },
      { t: 'download#counts', d: -categoryId },
      { t: 'download#counts', d: dl },
      { t: 'download_daily_stats#counts', d: null },
      { t: 'file#counts', d: null },
      { t: 'file#counts', d: dl },
      { t: 'version#counts', d: null },
      { t: 'version#counts', d: dl },
    ]);
  });

  it('marks its own statement only: a later write in the same transaction has its bumps from the triggers', async () => {
    await t.app.db.compactCacheVersions();
    const mark = async (s: { query: TestApp['app']['db']['query'] }) =>
      (await s.query<{ m: string }>("SELECT current_setting('dcs.counted', true) AS m"))[0]!.m;
    await t.app.db.transaction(async (s) => {
      // Today's statistics row absent (the INSERT path), then present (ON CONFLICT DO UPDATE): each time, every
      // trigger the count fired took its entry off the mark, and only the statement's timestamp is left.
      await s.query('DELETE FROM "download_daily_stats" WHERE "downloadId" = $1', [file.version.downloadId]);
      await countFileDownload(s, file);
      expect(await mark(s)).toMatch(/^[^|]+\|$/);
      await countFileDownload(s, file);
      expect(await mark(s)).toMatch(/^[^|]+\|$/);
      await s.query('UPDATE "download" SET "tagLine" = $1 WHERE "id" = $2', [
        'Edited after a count',
        file.version.downloadId,
      ]);
    });
    const rows = await bumps();
    // The edit changed data, not counters: the download table and the download itself, and its category.
    expect(rows).toContainEqual({ t: 'download', d: null });
    expect(rows).toContainEqual({ t: 'download', d: file.version.downloadId });
    expect(rows).toContainEqual({ t: 'download', d: -categoryId });
    expect(rows).toContainEqual({ t: 'file#counts', d: file.version.downloadId });
  });

  // The release before counted with PLAIN_COUNT; during a rolling upgrade both count on one database. Rows taken in
  // two orders made concurrent counts of one file wait on each other (deadlocks, or convoys of many seconds).
  it.skipIf(kind === 'pglite')(
    'takes the rows in the order the release before did: mixed counts all finish, no deadlock',
    async () => {
      const before = await counters();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2 === 0
            ? countFileDownload(t.app.db, file)
            : t.app.db.query(PLAIN_COUNT, [file.id, file.versionId, file.version.downloadId]),
        ),
      );
      expect(performance.now() - started).toBeLessThan(10_000);
      const after = await counters();
      expect(after).toEqual({ f: before.f + 40, v: before.v + 40, d: before.d + 40, s: before.s + 40 });
    },
  );

  it('counts nothing and bumps nothing of a file that is gone', async () => {
    await t.app.db.compactCacheVersions();
    await countFileDownload(t.app.db, {
      id: 2_000_000_000,
      versionId: 2_000_000_000,
      version: { downloadId: 2_000_000_000 },
    });
    expect(await bumps()).toEqual([]);
  });
});
