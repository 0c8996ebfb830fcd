// The benchmark's seed (bench/seed.ts): a grown catalogue is the catalogue seeded at that size, and its expressions
// stay right up to 5,000,000 downloads (the last downloads of a 5M catalogue are written with the real statements).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { grow, seed, sizeFor, type SeedResult } from '../bench/seed.js';
import { forEachDatabase, migratedDatabase } from './helpers/app.js';

const KEY = 'dm_bench_seed_test_key_000000000000000000000000';
const MINUTE = 60_000;

forEachDatabase((kind) => {
  let db: Database;
  let drop = async () => {};
  let seeded: SeedResult;
  const one = async <R>(sql: string) => (await db.query<R>(sql))[0]!;
  const schema = () =>
    db.query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_indexes WHERE schemaname = current_schema()
    UNION ALL SELECT count(*)::text FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`);

  beforeAll(async () => {
    // migrated from the run's template: the seed's own migrate() then has nothing to do
    const fresh = await migratedDatabase(kind);
    drop = fresh.drop;
    db = await openDatabase(fresh.target);
    seeded = await seed(db, KEY, sizeFor(1000));
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await drop();
  });

  describe('seed and grow', () => {
    it('seeds the rows of its size: a version, 2 files and 4 comments per download, a user per 50 downloads (at least 100)', async () => {
      expect(sizeFor(50_000)).toEqual({ users: 1000, downloads: 50_000, filesPerDownload: 2, commentsPerDownload: 4 });
      expect(sizeFor(2000).users).toBe(100);
      const counts = await one<
        Record<string, number>
      >(`SELECT (SELECT count(*) FROM download)::int AS d, (SELECT count(*) FROM version)::int AS v,
        (SELECT count(*) FROM file)::int AS f, (SELECT count(*) FROM comment)::int AS c, (SELECT count(*) FROM "user")::int AS u,
        (SELECT count(*) FROM download WHERE "currentVersionId" IS NULL)::int AS unversioned`);
      expect(counts).toEqual({ d: 1000, v: 1000, f: 2000, c: 4000, u: 100, unversioned: 0 });
    });

    it('writes the last downloads of a 5,000,000-download catalogue with the same statements, without overflow', async () => {
      const before = await schema();
      const big = sizeFor(5_000_000);
      // As if downloads 1 … 4,999,990 were there: only the last 10 are written (and the users up to 100,000).
      await grow(db, { anchor: seeded.anchor, size: { ...big, downloads: 4_999_990, users: seeded.size.users } }, big);
      expect(await schema()).toEqual(before); // indexes and foreign keys are back
      // Timestamps are stored as UTC without a zone: their epoch is read as UTC.
      const rows = await db.query<{
        title: string;
        downloadCount: number;
        viewCount: number;
        categoryId: number;
        userId: number;
        lastUpdate: number;
        createdDate: number;
      }>(
        `SELECT title, "downloadCount", "viewCount", "categoryId", "userId", (extract(epoch FROM "lastUpdate") * 1000)::float8 AS "lastUpdate",
                (extract(epoch FROM "createdDate") * 1000)::float8 AS "createdDate" FROM download WHERE id > 1000 ORDER BY id`,
      );
      expect(rows).toHaveLength(10);
      const anchor = new Date(seeded.anchor).getTime();
      rows.forEach((r, i) => {
        const g = 4_999_991 + i;
        expect(r.title).toBe(`Download ${g}`);
        expect(r.downloadCount).toBe(Number((BigInt(g) * 7919n) % 10000n));
        expect(r.viewCount).toBe(Number((BigInt(g) * 104729n) % 100000n));
        expect(r.categoryId).toBe(1 + (g % 200));
        expect(r.userId).toBe(1 + (g % 100_000));
        expect(r.lastUpdate).toBe(anchor - g * MINUTE);
        expect(r.createdDate).toBe(anchor - 2 * g * MINUTE);
      });
      const counts = await one<
        Record<string, number>
      >(`SELECT (SELECT count(*) FROM "user")::int AS u, (SELECT max(id) FROM "user")::int AS "maxUser",
        (SELECT count(*) FROM version v JOIN download d ON d."currentVersionId" = v.id WHERE d.id > 1000)::int AS v,
        (SELECT count(*) FROM file f JOIN version v ON v.id = f."versionId" WHERE v."downloadId" > 1000)::int AS f,
        (SELECT count(*) FROM comment WHERE "downloadId" > 1000)::int AS c`);
      expect(counts).toEqual({ u: 100_000, maxUser: 100_000, v: 10, f: 20, c: 40 });
      const visible = await one<{ n: number }>(`SELECT count(*)::int AS n FROM download WHERE state = 'visible'`);
      const counted = await one<{ n: number }>(`SELECT sum("downloadCount")::int AS n FROM category`);
      expect(counted.n).toBe(visible.n);
    }, 120_000);

    it('refuses to shrink a catalogue', async () => {
      await expect(grow(db, seeded, sizeFor(500))).rejects.toThrow(/grows/);
    });
  });
});
