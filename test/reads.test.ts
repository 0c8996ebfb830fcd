// The hand-written read path of downloads (src/modules/downloads/store.ts) must answer exactly what Prisma answers for the same read:
// every field, type and order, on every database. Compared row by row against Prisma on varied data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, freshPostgres, startTestApp, type TestApp } from './helpers/app.js';
import { openDatabase } from '../src/db/client.js';
import {
  DOWNLOAD_ORDER_COLUMNS,
  downloadById,
  downloadPage,
  downloadRelationsOf,
  type DownloadFilter,
} from '../src/modules/downloads/store.js';
import { revive } from '../src/db/rows.js';

describe('downloadRelationsOf', () => {
  it('takes the shapes the reads load and refuses the rest', () => {
    expect(downloadRelationsOf(undefined)).toEqual({ category: false, currentVersion: false });
    expect(downloadRelationsOf({})).toEqual({ category: false, currentVersion: false });
    expect(downloadRelationsOf({ include: { category: true } })).toEqual({
      category: true,
      currentVersion: false,
      tags: false,
    });
    expect(downloadRelationsOf({ include: { category: true, currentVersion: true } })).toEqual({
      category: true,
      currentVersion: true,
      tags: false,
    });
    // The tag names, as Download.tags selects them, are read too; any other shape of tags is Prisma's.
    expect(downloadRelationsOf({ include: { tags: { select: { tag: { select: { name: true } } } } } })).toEqual({
      category: false,
      currentVersion: false,
      tags: true,
    });
    expect(downloadRelationsOf({ include: { tags: { select: { tag: true } } } })).toBeNull();
    // Anything beside the tag's name, at any level, is Prisma's too.
    expect(
      downloadRelationsOf({ include: { tags: { select: { tag: { select: { name: true, id: true } } } } } }),
    ).toBeNull();
    expect(
      downloadRelationsOf({ include: { tags: { select: { tag: { select: { name: true } }, tagId: true } } } }),
    ).toBeNull();
    expect(
      downloadRelationsOf({ include: { tags: { select: { tag: { select: { name: true } } }, take: 1 } } }),
    ).toBeNull();
    expect(downloadRelationsOf({ include: { tags: { select: { tag: { select: { name: false } } } } } })).toBeNull();
    expect(downloadRelationsOf({ include: { tags: true } })).toBeNull();
    expect(downloadRelationsOf({ include: { category: { include: { parent: true } } } })).toBeNull();
    expect(downloadRelationsOf({ select: { id: true } })).toBeNull();
  });
});

describe('revive', () => {
  it('reads zone-less timestamps as UTC and keeps explicit zones; BigInt columns become bigint', () => {
    const d = revive<any>('Download', {
      lastUpdate: '2026-01-02T03:04:05.678',
      createdDate: '2026-01-02T03:04:05.678+02:00',
      deletedAt: null,
    });
    expect(d.lastUpdate.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(d.createdDate.toISOString()).toBe('2026-01-02T01:04:05.678Z');
    expect(d.deletedAt).toBeNull();
    expect(revive<any>('Category', { maxFileSize: 1099511627776 }).maxFileSize).toBe(1099511627776n);
    expect(() => revive('Nope', {})).toThrow(/No model/);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  const categoryIds: number[] = [];
  const prefixIds: number[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, { softDeleteRetentionDays: 100_000 }); // the rows are old: the purge job must leave them
    const p = t.prisma;
    const user = await p.user.create({
      data: { username: 'reader', primaryGroupId: (await p.group.findFirstOrThrow()).id },
    });
    const root = await p.category.create({
      data: { title: 'Root «ü»', maxDownloadSize: 2n ** 45n, description: 'line\nbreak "quoted"' },
    });
    const leaf = await p.category.create({
      data: { title: 'Leaf', parentId: root.id, requireApproval: true, allowedFileTypes: 'zip,txt' },
    });
    categoryIds.push(root.id, leaf.id);
    for (const title of ['P1', 'P2']) prefixIds.push((await p.prefix.create({ data: { title } })).id);
    const states = ['visible', 'visible', 'moderated', 'deleted', 'draft'] as const;
    const base = Date.UTC(2026, 0, 1, 12, 0, 0, 0);
    for (let i = 0; i < 30; i++) {
      const d = await p.download.create({
        data: {
          categoryId: categoryIds[i % 2]!,
          userId: user.id,
          title: i % 7 === 0 ? 'Same title' : `Title ${String.fromCharCode(65 + ((i * 11) % 26))} ${i}`,
          tagLine: i % 3 ? `tag line ${i}` : '',
          description: `Description ${i} with "quotes" and \\ backslash`,
          coverUrl: i % 4 === 0 ? null : `https://example.com/${i}.png`,
          ratingAvg: i / 7,
          ratingCount: i,
          downloadCount: (i * 37) % 11,
          viewCount: (i * 13) % 5,
          // Ties on purpose (every third pair shares lastUpdate), and milliseconds that must survive.
          lastUpdate: new Date(base + Math.floor(i / 2) * 60_000 + 123),
          createdDate: new Date(base - i * 1000 + 7),
          state: states[i % states.length],
          deletedAt: states[i % states.length] === 'deleted' ? new Date(base + i) : null,
          stateBeforeDelete: states[i % states.length] === 'deleted' ? 'visible' : null,
          prefixId: i % 3 === 0 ? null : prefixIds[i % 2],
          isPasswordProtected: i % 5 === 0,
        },
      });
      if (i % 4 !== 1) {
        const v = await p.version.create({
          data: { downloadId: d.id, versionString: `1.${i}`, releaseDate: new Date(base + i * 3_600_000 + 999) },
        });
        await p.download.update({ where: { id: d.id }, data: { currentVersionId: v.id } });
      }
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  const relations = [
    { category: false, currentVersion: false },
    { category: true, currentVersion: false },
    { category: false, currentVersion: true },
    { category: true, currentVersion: true },
  ];
  // Prisma's own argument for the same relations (no include at all when none).
  const include = (rel: {
    category: boolean;
    currentVersion: boolean;
  }): { include?: { category?: true; currentVersion?: true } } =>
    rel.category || rel.currentVersion
      ? {
          include: {
            ...(rel.category ? { category: true } : {}),
            ...(rel.currentVersion ? { currentVersion: true } : {}),
          },
        }
      : {};

  it('a download by id: the same object Prisma gives, with and without each relation', async () => {
    const ids = (await t.prisma.download.findMany({ select: { id: true } })).map((d) => d.id);
    expect(ids.length).toBe(30);
    for (const id of ids) {
      for (const rel of relations) {
        const expected = await t.prisma.download.findUnique({ where: { id }, ...include(rel) });
        expect(await downloadById(t.app.db, id, rel)).toStrictEqual(expected);
      }
    }
    expect(await downloadById(t.app.db, 999_999, relations[3]!)).toBeNull();
  });

  it('a page of downloads: the same rows, order and total as Prisma for every filter, order and window', async () => {
    const filters: DownloadFilter[] = [
      {},
      { state: 'visible' },
      { state: 'deleted' },
      { categoryId: categoryIds[1] },
      { categoryId: categoryIds[0], state: 'visible' },
      { prefixId: null },
      { prefixId: prefixIds[1] },
      { since: new Date(Date.UTC(2026, 0, 1, 12, 7, 0, 123)) },
      { categoryId: 999_999 },
    ];
    const windows = [
      { skip: 0, take: 20 },
      { skip: 5, take: 7 },
      { skip: 28, take: 5 },
      { skip: 40, take: 10 },
    ];
    let compared = 0;
    for (const filter of filters) {
      const where = {
        categoryId: filter.categoryId,
        prefixId: filter.prefixId,
        state: filter.state,
        lastUpdate: filter.since ? { gte: filter.since } : undefined,
      };
      const total = await t.prisma.download.count({ where });
      for (const column of DOWNLOAD_ORDER_COLUMNS) {
        for (const direction of ['asc', 'desc'] as const) {
          for (const w of windows) {
            const rel = relations[compared % relations.length]!;
            const expected = await t.prisma.download.findMany({
              where,
              ...include(rel),
              orderBy: [{ [column]: direction }, { id: direction }],
              skip: w.skip,
              take: w.take,
            });
            const got = await downloadPage(t.app.db, filter, { column, direction }, w, rel);
            expect(got.rows, JSON.stringify({ filter, column, direction, w })).toStrictEqual(expected);
            expect(got.total).toBe(total);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(filters.length * DOWNLOAD_ORDER_COLUMNS.length * 2 * windows.length);
  });

  it('refuses an order column that is not one of the list orders', async () => {
    await expect(
      downloadPage(
        t.app.db,
        {},
        { column: 'id; DROP TABLE download' as never, direction: 'asc' },
        { skip: 0, take: 1 },
        relations[0]!,
      ),
    ).rejects.toThrow(/Not an order column/);
  });

  it('through both faces: one statement per list or get, the Prisma path still serving other shapes', async () => {
    const visible = await t.prisma.download.findFirstOrThrow({
      where: { state: 'visible', currentVersionId: { not: null } },
      include: { category: true, currentVersion: true },
    });
    await t.rest('GET', '/api/mc-dm-downloads/', { query: { per_page: 1 } }); // the key and permission tables, cached from here on
    // The fewest of three runs: a statement of the service's own (a key's last use stamped, a job) may fall beside one.
    let fewest = Number.POSITIVE_INFINITY;
    let rest!: Awaited<ReturnType<typeof t.rest>>;
    for (let i = 0; i < 3; i++) {
      t.app.readCache.clear(); // what computing the answer costs
      const before = t.app.db.statements();
      rest = await t.rest('GET', `/api/mc-dm-downloads/${visible.id}/`, { query: { with: 'full' } });
      fewest = Math.min(fewest, t.app.db.statements() - before);
    }
    expect(fewest).toBe(1);
    expect(rest.status).toBe(200);
    expect(rest.body.download.Category.title).toBe(visible.category.title);
    expect(rest.body.download.CurrentVersion.version_string).toBe(visible.currentVersion!.versionString);
    expect(rest.body.download.last_update).toBe(Math.floor(visible.lastUpdate.getTime() / 1000));

    fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 3; i++) {
      t.app.readCache.clear();
      const before = t.app.db.statements();
      const page = await t.rest('GET', '/api/mc-dm-downloads/', { query: { page: 9, per_page: 10, with: 'full' } });
      expect(page.status).toBe(200);
      expect(page.body.downloads).toEqual([]);
      expect(page.body.pagination.total).toBe(30); // a super-user key lists every state
      fewest = Math.min(fewest, t.app.db.statements() - before);
    }
    expect(fewest).toBe(2); // an empty page past the end counts separately

    // Tags are read by the hand-written statement too (their names, sorted), with the rows Prisma would answer.
    await t.prisma.tag.create({ data: { name: 'alpha', downloads: { create: { downloadId: visible.id } } } });
    const gql = await t.gqlOk(
      `query($id: Int!) { download(downloadId: $id) { title tags category { title } currentVersion { versionString } }
      downloads(perPage: 100) { nodes { downloadId tags category { categoryId } } } }`,
      { id: visible.id },
    );
    expect(gql.download).toEqual({
      title: visible.title,
      tags: ['alpha'],
      category: { title: visible.category.title },
      currentVersion: { versionString: visible.currentVersion!.versionString },
    });
    const listed = gql.downloads.nodes.find((n: any) => n.downloadId === visible.id);
    expect(listed).toEqual({ downloadId: visible.id, tags: ['alpha'], category: { categoryId: visible.categoryId } });
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server: prepared statements', () => {
  it('prepares each hand-written statement once per connection, so the server parses and plans it once', async () => {
    const fresh = await freshPostgres();
    const db = await openDatabase({ url: fresh.url, poolSize: 1 }); // one connection: every query below runs on it
    try {
      const sql = 'SELECT $1::int + 1 AS n';
      expect(await db.query(sql, [1])).toEqual([{ n: 2 }]);
      expect(await db.query(sql, [41])).toEqual([{ n: 42 }]);
      const prepared = await db.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements',
      );
      const ours = prepared.filter((p) => p.statement === sql);
      expect(ours).toHaveLength(1); // prepared once, run twice
      expect(ours[0]!.name).toMatch(/^dcs_[0-9a-f]{16}$/);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
});
