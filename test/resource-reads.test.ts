// The hand-written reads of categories, comments and files (each module's store.ts) must answer exactly what
// Prisma answers for the same read: every field, type and order, for every filter, order, direction and window
// (offset pages and keyset windows, forward and backward), on every database. And each list or get through either
// face costs one SQL statement, its error answers included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import type { Slice } from '../src/db/slices.js';
import { categoryById, categoryPage, categoryParentOf } from '../src/modules/categories/store.js';
import { commentById, commentPage, commentRelationsOf } from '../src/modules/comments/store.js';
import { fileById, filePage, fileQueryCovered } from '../src/modules/files/store.js';
import { downloadsById } from '../src/modules/downloads/store.js';
import { childPages } from '../src/db/child-pages.js';
import { prismaAfter, prismaOrderBy, type KeysetSpec, type Window } from '../src/db/keyset.js';
import { CATEGORY_KEYS, COMMENT_KEYS, FILE_KEYS, keysetOf } from '../src/modules/keyset-orders.js';

describe('which query arguments the hand-written reads cover', () => {
  it('takes the shapes they load and refuses the rest', () => {
    expect(commentRelationsOf({})).toEqual({ user: null });
    expect(commentRelationsOf({ include: { download: true, user: { select: { username: true } } } })).toEqual({
      user: 'username',
    });
    expect(commentRelationsOf({ include: { user: true } })).toEqual({ user: 'row' });
    expect(commentRelationsOf({ include: { edits: true } })).toBeNull();
    expect(commentRelationsOf({ include: { download: { include: { category: true } } } })).toBeNull();
    expect(commentRelationsOf({ select: { id: true } })).toBeNull();
    expect(fileQueryCovered(undefined)).toBe(true);
    expect(fileQueryCovered({ include: { version: true } })).toBe(true);
    expect(fileQueryCovered({ include: { version: { include: { download: true } } } })).toBe(true);
    expect(fileQueryCovered({ include: { version: { include: { files: true } } } })).toBe(false);
    expect(categoryParentOf({ include: { parent: true } })).toBe(true);
    expect(categoryParentOf({})).toBe(false);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  const ids = {
    categories: [] as number[],
    downloads: [] as number[],
    versions: [] as number[],
    users: [] as number[],
  };
  const base = Date.UTC(2026, 0, 1, 12, 0, 0, 0);
  beforeAll(async () => {
    t = await startTestApp(kind, { softDeleteRetentionDays: 100_000 }); // old rows: the purge job must leave them
    const p = t.prisma;
    const group = (await p.group.findFirstOrThrow()).id;
    for (const username of ['ann', 'bob «ü»', 'cy'])
      ids.users.push((await p.user.create({ data: { username, primaryGroupId: group } })).id);
    const root = await p.category.create({ data: { title: 'Root', displayOrder: 2, description: 'a "quoted"\nline' } });
    ids.categories.push(root.id);
    for (let i = 0; i < 6; i++) {
      const c = await p.category.create({
        data: {
          title: i % 2 ? `Beta ${i}` : `alpha ${i}`,
          parentId: i < 3 ? root.id : ids.categories[1],
          displayOrder: i % 3,
          downloadCount: (i * 7) % 4,
          maxVersionSize: BigInt(i) * 2n ** 40n,
        },
      });
      ids.categories.push(c.id);
    }
    // Past 2^53, on a category that is nobody's parent: Prisma's own relation loads round such values (they come
    // through JSON numbers), so only rows read directly can be compared with it.
    await p.category.update({ where: { id: ids.categories[6]! }, data: { maxFileSize: 2n ** 60n + 1n } });
    const states = ['visible', 'moderated', 'deleted'] as const;
    for (let i = 0; i < 4; i++) {
      const d = await p.download.create({
        data: {
          categoryId: ids.categories[1 + (i % 3)]!,
          userId: ids.users[i % 3]!,
          title: `D${i}`,
          state: i === 3 ? 'moderated' : 'visible',
          lastUpdate: new Date(base + i),
          createdDate: new Date(base - i),
        },
      });
      ids.downloads.push(d.id);
      for (let v = 0; v < 2; v++) {
        const version = await p.version.create({
          data: { downloadId: d.id, versionString: `1.${v}`, releaseDate: new Date(base + v * 1000 + 5) },
        });
        ids.versions.push(version.id);
        for (let f = 0; f < 7; f++) {
          await p.file.create({
            data: {
              versionId: version.id,
              filename: `f${f}.zip`,
              displayOrder: f % 3,
              fileSize: f === 6 ? 2n ** 55n + 3n : BigInt((f * 1000) % 3000),
              downloadCount: (f * 5) % 4,
              isDeleted: f === 4,
              deletedAt: f === 4 ? new Date(base) : null,
              validationStatus: f === 5 ? 'failed' : 'passed',
              validationError: f === 5 ? 'mime: no' : null,
              lastAttemptDate: f % 2 ? new Date(base + f * 7 + 3) : null,
              externalUrl: f === 2 ? 'https://example.com/x.zip' : null,
              isExternallyLinked: f === 2,
            },
          });
        }
      }
      for (let c = 0; c < 9; c++) {
        await p.comment.create({
          data: {
            downloadId: d.id,
            userId: ids.users[c % 3]!,
            message: `m ${c} «${i}» \\ "q"`,
            state: states[c % 3],
            // ties on purpose: pairs share commentDate, a third of the comments were never edited
            commentDate: new Date(base + Math.floor(c / 2) * 60_000 + 17),
            lastEditDate: c % 3 === 0 ? null : new Date(base + (c % 4) * 1000 + 9),
            editCount: c % 3,
          },
        });
      }
    }
    await p.teamMember.create({ data: { downloadId: ids.downloads[0]!, userId: ids.users[1]! } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const db = () => t.app.db;
  const directions = ['asc', 'desc'] as const;

  /** Offset pages and keyset windows (no cursor, forward after a row, backward before a row) of a list in `spec`. */
  async function slices(
    spec: KeysetSpec,
    rowsInOrder: { id: number }[],
    sortValue: (r: any) => unknown,
  ): Promise<Slice[]> {
    const at = (i: number) => rowsInOrder[Math.min(i, rowsInOrder.length - 1)] as any;
    const out: Slice[] = [
      { spec, skip: 0, take: 20 },
      { spec, skip: 3, take: 4 },
      { spec, skip: 100, take: 5 },
    ];
    if (rowsInOrder.length > 0) {
      for (const [i, backward, size] of [
        [2, false, 3],
        [5, true, 2],
        [0, false, 50],
      ] as const) {
        const cursor = { value: sortValue(at(i)) as never, id: at(i).id };
        out.push({ spec, window: { size, backward, cursor }, take: size + 1 });
      }
    }
    out.push({ spec, window: { size: 4, backward: true, cursor: null }, take: 5 });
    return out;
  }
  const prismaSlice = (s: Slice) => {
    const w: Window = s.window ?? { size: s.take, backward: false, cursor: null };
    return { after: prismaAfter(s.spec, w), orderBy: prismaOrderBy(s.spec, w) as never, skip: s.skip, take: s.take };
  };

  it('a category by id, with and without its parent: the object Prisma gives', async () => {
    for (const id of [...ids.categories, 999_999]) {
      expect(await categoryById(db(), id)).toStrictEqual(await t.prisma.category.findUnique({ where: { id } }));
      expect(await categoryById(db(), id, true)).toStrictEqual(
        await t.prisma.category.findUnique({ where: { id }, include: { parent: true } }),
      );
    }
    expect((await categoryById(db(), ids.categories[6]!))!.maxFileSize).toBe(2n ** 60n + 1n); // past 2^53, exact
  });

  it('pages of categories: the rows, order and total Prisma gives, for every order, direction and window', async () => {
    let compared = 0;
    const total = await t.prisma.category.count();
    for (const order of Object.keys(CATEGORY_KEYS) as (keyof typeof CATEGORY_KEYS)[]) {
      for (const direction of directions) {
        const spec = keysetOf('categories', CATEGORY_KEYS, order, direction, 'display_order');
        const all = await t.prisma.category.findMany({
          orderBy: prismaOrderBy(spec, { size: 0, backward: false, cursor: null }) as never,
        });
        for (const s of await slices(spec, all, (r) => r[spec.column.name])) {
          for (const parent of [false, true]) {
            const q = prismaSlice(s);
            const expected = await t.prisma.category.findMany({
              where: q.after,
              orderBy: q.orderBy,
              skip: q.skip,
              take: q.take,
              ...(parent ? { include: { parent: true } } : {}),
            });
            const got = await categoryPage(db(), s, { parent });
            expect(got.rows, JSON.stringify({ order, direction, s })).toStrictEqual(expected);
            expect(got.total).toBe(total);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(3 * 2 * 7 * 2);
  });

  it('a comment by id, with its download and author as asked: the object Prisma gives', async () => {
    const all = await t.prisma.comment.findMany({ select: { id: true } });
    for (const { id } of [...all.slice(0, 12), { id: 999_999 }]) {
      expect(await commentById(db(), id, null)).toStrictEqual(
        await t.prisma.comment.findUnique({ where: { id }, include: { download: true } }),
      );
      expect(await commentById(db(), id, 'username')).toStrictEqual(
        await t.prisma.comment.findUnique({
          where: { id },
          include: { download: true, user: { select: { username: true } } },
        }),
      );
      expect(await commentById(db(), id, 'row')).toStrictEqual(
        await t.prisma.comment.findUnique({ where: { id }, include: { download: true, user: true } }),
      );
    }
  });

  it('pages of comments: the parent, rows, order and total Prisma gives, for every filter, order, direction and window', async () => {
    const since = new Date(base + 2 * 60_000 + 17);
    const filters = [
      { downloadId: ids.downloads[0] },
      { downloadId: ids.downloads[1], state: 'visible' as const },
      { downloadId: ids.downloads[2], since },
      { state: 'visible' as const, since },
      {},
      { downloadId: 999_999 },
    ];
    const users = [null, 'username', 'row'] as const;
    let compared = 0;
    for (const filter of filters) {
      const where = {
        downloadId: filter.downloadId,
        state: filter.state,
        commentDate: filter.since ? { gte: filter.since } : undefined,
      };
      const total = await t.prisma.comment.count({ where });
      const parent =
        filter.downloadId === undefined
          ? undefined
          : await t.prisma.download.findUnique({ where: { id: filter.downloadId } });
      for (const order of Object.keys(COMMENT_KEYS) as (keyof typeof COMMENT_KEYS)[]) {
        for (const direction of directions) {
          const spec = keysetOf('comments', COMMENT_KEYS, order, direction, 'comment_date');
          const all = await t.prisma.comment.findMany({
            where,
            orderBy: prismaOrderBy(spec, { size: 0, backward: false, cursor: null }) as never,
          });
          for (const s of await slices(spec, all, (r) => r[spec.column.name])) {
            const user = users[compared % users.length]!;
            const q = prismaSlice(s);
            const include = {
              download: true,
              ...(user === 'row'
                ? { user: true }
                : user === 'username'
                  ? { user: { select: { username: true } } }
                  : {}),
            } as const;
            const expected = await t.prisma.comment.findMany({
              where: { AND: [where, q.after] },
              orderBy: q.orderBy,
              skip: q.skip,
              take: q.take,
              include,
            });
            const got = await commentPage(db(), filter, s, user);
            expect(got.rows, JSON.stringify({ filter, order, direction, s })).toStrictEqual(expected);
            expect(got.total).toBe(total);
            expect(got.parent).toStrictEqual(parent);
            compared++;
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(filters.length * 2 * 2 * 4);
  });

  it("a file by id, with its version, download and category, and the visitor's team membership", async () => {
    const all = await t.prisma.file.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
    for (const { id } of [...all.slice(0, 16), { id: 999_999 }]) {
      const expected = await t.prisma.file.findUnique({
        where: { id },
        include: { version: { include: { download: { include: { category: true } } } } },
      });
      const got = await fileById(db(), id, ids.users[1]!);
      expect(got?.file ?? null).toStrictEqual(expected);
      if (expected) expect(got!.isTeamMember).toBe(expected.version.downloadId === ids.downloads[0]);
    }
    const big = await t.prisma.file.findFirstOrThrow({ where: { fileSize: 2n ** 55n + 3n } });
    expect((await fileById(db(), big.id, 0))!.file.fileSize).toBe(2n ** 55n + 3n); // past 2^53, exact
  });

  it('pages of files: the parent, rows, order and total Prisma gives, for every filter, order, direction and window', async () => {
    const filters = [{ versionId: ids.versions[0] }, { versionId: ids.versions[3] }, {}, { versionId: 999_999 }];
    let compared = 0;
    for (const filter of filters) {
      const where = { versionId: filter.versionId, isDeleted: false };
      const total = await t.prisma.file.count({ where });
      const parent =
        filter.versionId === undefined
          ? undefined
          : await t.prisma.version.findUnique({ where: { id: filter.versionId }, include: { download: true } });
      for (const order of Object.keys(FILE_KEYS) as (keyof typeof FILE_KEYS)[]) {
        for (const direction of directions) {
          const spec = keysetOf('files', FILE_KEYS, order, direction, 'display_order');
          const all = await t.prisma.file.findMany({
            where,
            orderBy: prismaOrderBy(spec, { size: 0, backward: false, cursor: null }) as never,
          });
          for (const s of await slices(spec, all, (r) => r[spec.column.name])) {
            const q = prismaSlice(s);
            const expected = await t.prisma.file.findMany({
              where: { AND: [where, q.after] },
              orderBy: q.orderBy,
              skip: q.skip,
              take: q.take,
              include: { version: { include: { download: true } } },
            });
            const got = await filePage(db(), filter, s, ids.users[1]!);
            expect(
              got.rows,
              JSON.stringify({ filter, order, direction, s }, (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
            ).toStrictEqual(expected);
            expect(got.total).toBe(total);
            expect(got.parent).toStrictEqual(parent);
            expect(got.isTeamMember).toBe(parent?.downloadId === ids.downloads[0]);
            compared++;
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(filters.length * 3 * 2 * 4);
  });

  it('downloads by id (the parents of the versions whose files a nested connection lists): the rows Prisma gives', async () => {
    const wanted = [...ids.downloads, 999_999, ids.downloads[0]!];
    const got = (await downloadsById(db(), wanted)).sort((a, b) => a.id - b.id);
    expect(got).toStrictEqual(
      await t.prisma.download.findMany({ where: { id: { in: wanted } }, orderBy: { id: 'asc' } }),
    );
    expect(await downloadsById(db(), [])).toEqual([]);
  });

  it('pages of children (the nested connections): the rows and totals Prisma gives, per parent', async () => {
    const windows = (spec: KeysetSpec, rows: any[]): Window[] => [
      { size: 3, backward: false, cursor: null },
      { size: 2, backward: true, cursor: null },
      ...(rows.length > 2
        ? [
            { size: 4, backward: false, cursor: { value: rows[1][spec.column.name], id: rows[1].id } },
            { size: 4, backward: true, cursor: { value: rows[2][spec.column.name], id: rows[2].id } },
          ]
        : []),
    ];
    const cases = [
      {
        source: { from: 'comment', parent: 'downloadId', model: 'Comment' },
        keys: COMMENT_KEYS,
        parents: ids.downloads,
        find: (a: any) => t.prisma.comment.findMany(a),
        count: (a: any) => t.prisma.comment.count(a),
      },
      {
        source: { from: 'file', parent: 'versionId', model: 'File', where: () => ['t."isDeleted" = false'] },
        keys: FILE_KEYS,
        parents: ids.versions.slice(0, 3),
        extra: { isDeleted: false },
        find: (a: any) => t.prisma.file.findMany(a),
        count: (a: any) => t.prisma.file.count(a),
      },
      {
        source: { from: 'category', parent: 'parentId', model: 'Category' },
        keys: CATEGORY_KEYS,
        parents: ids.categories.slice(0, 2),
        find: (a: any) => t.prisma.category.findMany(a),
        count: (a: any) => t.prisma.category.count(a),
      },
    ];
    let compared = 0;
    for (const c of cases) {
      for (const order of Object.keys(c.keys)) {
        for (const direction of directions) {
          const spec = keysetOf(c.source.from, c.keys as never, order as never, direction, order as never);
          const all = await c.find({
            where: { [c.source.parent]: c.parents[0], ...c.extra },
            orderBy: prismaOrderBy(spec, { size: 0, backward: false, cursor: null }),
          });
          for (const w of windows(spec, all)) {
            const pages = await childPages<any>(db(), c.source, spec, w, [...c.parents, 999_999]);
            for (const parent of c.parents) {
              const where = { [c.source.parent]: parent, ...c.extra };
              const expected = await c.find({
                where: { AND: [where, prismaAfter(spec, w)] },
                orderBy: prismaOrderBy(spec, w),
                take: w.size + 1,
              });
              expect(
                pages.get(parent)?.rows ?? [],
                JSON.stringify({ from: c.source.from, order, direction, w, parent }, (_k, v) =>
                  typeof v === 'bigint' ? String(v) : v,
                ),
              ).toStrictEqual(expected);
              expect(pages.get(parent)?.total ?? 0).toBe(await c.count({ where }));
              compared++;
            }
            expect(pages.get(999_999)).toEqual({ total: 0, rows: [] });
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
  });

  it('refuses an order column that is not a column name', async () => {
    const spec = {
      list: 'x',
      order: 'x',
      direction: 'asc',
      column: { name: 'id"; DROP TABLE file; --', kind: 'int' },
    } as KeysetSpec;
    await expect(categoryPage(db(), { spec, take: 1 })).rejects.toThrow(/Not an order column/);
  });

  describe('statements per request, through both faces', () => {
    let reader: { key: string; userId: number };
    /**
     * Statements of one request once the key and permission tables are cached: the fewest of five runs, since
     * statements beside the request (the once-a-minute record of a key's use, the purge job's first run a few
     * seconds after start, which on a loaded machine spans several requests) may fall into some of them.
     */
    const count = async (fn: () => Promise<unknown>) => {
      await fn();
      const runs: number[] = [];
      for (let i = 0; i < 5; i++) {
        t.app.readCache.clear(); // what computing the answer costs, not what giving it again costs
        const before = t.app.db.statements();
        await fn();
        runs.push(t.app.db.statements() - before);
      }
      return Math.min(...runs);
    };
    beforeAll(async () => {
      reader = await t.user('reader_one');
    });

    it('REST: one statement per list and get, with and without with=full, as a super-user key and as a user', async () => {
      const [d] = ids.downloads;
      const [v] = ids.versions;
      const comment = await t.prisma.comment.findFirstOrThrow({ where: { downloadId: d, state: 'visible' } });
      const file = await t.prisma.file.findFirstOrThrow({
        where: { versionId: v, isDeleted: false, validationStatus: 'passed' },
      });
      const routes = [
        '/api/mc-dm-categories/',
        `/api/mc-dm-categories/${ids.categories[1]}/`,
        `/api/mc-dm-comments/?download_id=${d}`,
        `/api/mc-dm-comments/${comment.id}/`,
        `/api/mc-dm-comments/?download_id=${d}&order=last_edit_date&direction=asc&page=2&per_page=2`,
        `/api/mc-dm-files/?version_id=${v}`,
        `/api/mc-dm-files/${file.id}/`,
        `/api/mc-dm-files/?version_id=${v}&order=file_size&direction=asc`,
      ];
      for (const key of [undefined, reader.key]) {
        for (const route of routes) {
          for (const full of ['', route.includes('?') ? '&with=full' : '?with=full']) {
            let res: any;
            const n = await count(async () => {
              res = await t.rest('GET', route + full, { key });
            });
            expect(res.status, route + full).toBe(200);
            expect(n, `${route}${full} ${key ? 'user' : 'super'}`).toBe(1);
          }
        }
      }
      // The super-user key lists every version's files and every download's comments: still one statement.
      expect(await count(() => t.rest('GET', '/api/mc-dm-files/'))).toBe(1);
      expect(await count(() => t.rest('GET', '/api/mc-dm-comments/'))).toBe(1);
    });

    it('REST: the error answers stay, each in one statement', async () => {
      const hidden = ids.downloads[3]!; // moderated: hidden from a plain user
      const cases: [string, number, string][] = [
        ['/api/mc-dm-comments/?download_id=999999', 404, 'mc_dm_api_error.download_not_found'],
        [`/api/mc-dm-comments/?download_id=${hidden}`, 403, 'do_not_have_permission'],
        ['/api/mc-dm-files/?version_id=999999', 404, 'mc_dm_api_error.version_not_found'],
        [`/api/mc-dm-files/?version_id=${ids.versions[7]}`, 403, 'do_not_have_permission'],
        ['/api/mc-dm-categories/999999/', 404, 'mc_dm_api_error.category_not_found'],
        ['/api/mc-dm-files/999999/', 404, 'mc_dm_api_error.file_not_found'],
        ['/api/mc-dm-comments/999999/', 404, 'mc_dm_api_error.comment_not_found'],
      ];
      for (const [route, status, code] of cases) {
        let res: any;
        const n = await count(async () => {
          res = await t.rest('GET', route, { key: reader.key });
        });
        expect(res.status, route).toBe(status);
        expect(res.body.errors[0].code, route).toBe(code);
        expect(n, route).toBe(1);
      }
      // The last page number there is: an empty page, not a failed statement.
      for (const route of [
        '/api/mc-dm-categories/',
        `/api/mc-dm-comments/?download_id=${ids.downloads[0]}`,
        `/api/mc-dm-files/?version_id=${ids.versions[0]}`,
      ]) {
        const res = await t.rest('GET', route, { key: reader.key, query: { page: 2147483647, per_page: 100 } });
        expect(res.status, route).toBe(200);
        expect(Object.values(res.body).find(Array.isArray), route).toEqual([]);
      }
      // Required filters are refused before any statement.
      expect(await count(() => t.rest('GET', '/api/mc-dm-comments/', { key: reader.key }))).toBe(0);
      expect(await count(() => t.rest('GET', '/api/mc-dm-files/', { key: reader.key }))).toBe(0);
    });

    it('GraphQL: one statement per list, get and root connection; a failed file shown to its owner costs none more', async () => {
      const [d] = ids.downloads;
      const [v] = ids.versions;
      const comment = await t.prisma.comment.findFirstOrThrow({ where: { downloadId: d, state: 'visible' } });
      const file = await t.prisma.file.findFirstOrThrow({ where: { versionId: v, isDeleted: false } });
      const owner = await t.prisma.user.findUniqueOrThrow({
        where: { id: (await t.prisma.download.findUniqueOrThrow({ where: { id: d } })).userId },
      });
      const ownerKey = await t.key('USER', ['all'], owner.id);
      const operations = [
        `{ categories(perPage: 3) { nodes { categoryId title parent { title } canAddDownload } pagination { total } } }`,
        `{ category(categoryId: ${ids.categories[2]}) { title parent { categoryId } } }`,
        `{ categoriesConnection(first: 2, order: TITLE) { totalCount edges { cursor node { title parent { title } } } pageInfo { hasNextPage } } }`,
        `{ comments(downloadId: ${d}) { nodes { commentId username author { username } canEdit canDelete download { title } } pagination { total } } }`,
        `{ comment(commentId: ${comment.id}) { message username canView } }`,
        `{ commentsConnection(downloadId: ${d}, last: 2, order: LAST_EDIT_DATE) { totalCount edges { cursor node { message author { userId } } } } }`,
        `{ files(versionId: ${v}) { nodes { fileId fileSize validationStatus version { versionString } } pagination { total } } }`,
        `{ file(fileId: ${file.id}) { filename version { versionId } } }`,
        `{ filesConnection(versionId: ${v}, first: 3, order: FILE_SIZE) { totalCount nodes { fileId fileSize } pageInfo { endCursor } } }`,
      ];
      for (const key of [undefined, ownerKey]) {
        for (const op of operations) {
          let data: any;
          const n = await count(async () => {
            data = await t.gqlOk(op, {}, key);
          });
          expect(n, op).toBe(1);
          expect(Object.values(data)[0], op).not.toBeNull();
        }
      }
      // The owner (a guest-group user here) may not manage the files, so the failed file is hidden from them after
      // asking whether they are on the team, which the list's statement answered; the super-user key sees it.
      const asOwner = await t.gqlOk(
        `{ files(versionId: ${v}, perPage: 100) { nodes { validationStatus } } }`,
        {},
        ownerKey,
      );
      expect(asOwner.files.nodes.map((f: any) => f.validationStatus)).not.toContain('FAILED');
      const asSuper = await t.gqlOk(`{ files(versionId: ${v}, perPage: 100) { nodes { validationStatus } } }`);
      expect(asSuper.files.nodes.map((f: any) => f.validationStatus)).toContain('FAILED');
    });

    it('GraphQL: shapes the reads do not cover still answer, through Prisma', async () => {
      const [d] = ids.downloads;
      const data = await t.gqlOk(
        `{ comments(downloadId: ${d}, perPage: 2) { nodes { commentId download { category { title } } edits { editorId } } pagination { total } } }`,
      );
      expect(data.comments.nodes).toHaveLength(2);
      expect(data.comments.pagination.total).toBe(9);
      expect(data.comments.nodes[0].download.category.title).toBeTypeOf('string');
    });
  });
});
