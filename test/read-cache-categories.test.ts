// The read cache per category (src/http/cache-scope.ts, migration 20270130000000_category_scoped_versions): a list of
// one category's downloads (REST ?category_id=, GraphQL downloads and downloadsConnection with categoryId) is evicted
// by writes to that category's downloads and totals only, while other lists keep being evicted by any write to their
// tables. One test per rule, both databases, both faces: an edit, a new download, a move, a delete, a write in SQL and
// counters in category A are seen by the next read of A's lists, on this instance and on another one, and leave the
// kept lists of B given again (cache hits).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../src/config.js';
import { forEachDatabaseSideBySide, startTestApp, type TestApp } from './helpers/app.js';
import {
  allKept,
  allMissed,
  cacheScopes,
  gqlText,
  prime,
  type Read,
  restText,
  secondInstance,
} from './helpers/cache-reads.js';

forEachDatabaseSideBySide((kind) => {
  describe("lists of one category's downloads", () => {
    let t: TestApp;
    let owner: { userId: number; key: string };
    /** Categories A and B, and C, a subcategory of A; their downloads by title. */
    const c = { a: 0, b: 0, child: 0 };
    const d: Record<string, number> = {};

    const create = async (category: number, title: string) => {
      const made = (
        await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: category, title } })
      ).body.download;
      expect(made?.download_id, title).toBeGreaterThan(0);
      d[title] = made.download_id;
      return made.download_id as number;
    };

    beforeAll(async () => {
      t = await startTestApp(kind, { cacheSeconds: 300, readCacheAdmitWindow: 0 });
      // Views are counted off: a flush of view counts would be a write (views are tested in views.test.ts).
      t.app.services.views = undefined;
      const category = async (title: string, parent?: number) =>
        (
          await t.rest('POST', '/api/mc-dm-categories/', {
            form: { title, ...(parent ? { parent_category_id: parent } : {}) },
          })
        ).body.category.category_id as number;
      c.a = await category('Maps');
      c.b = await category('Skins');
      c.child = await category('Desert maps', c.a);
      owner = await t.user('category-owner');
      await create(c.a, 'Oasis');
      await create(c.a, 'Canyon');
      await create(c.b, 'Knight');
      await create(c.b, 'Archer');
      await create(c.child, 'Dune');
    });
    afterAll(async () => {
      await t?.close();
    });

    const text = restText;
    const gql = gqlText;
    const LIST = `query($c: Int!) { downloads(categoryId: $c, perPage: 50) {
      nodes { title tagLine downloadCount category { title } owner { username } } pagination { total } } }`;
    const CONNECTION =
      'query($c: Int!) { downloadsConnection(categoryId: $c, first: 50) { totalCount nodes { title tagLine } } }';

    const PAGE = `query($c: Int!) { category(categoryId: $c) { title downloadCount
      downloads(first: 50) { totalCount nodes { title tagLine } } } }`;

    /** Every list of category `id`'s downloads, on both faces, against the instance at `base`. */
    const listsOf = (base: string, id: number): Record<string, Read> => ({
      'REST list': () => text(base, `/api/mc-dm-downloads/?category_id=${id}`),
      'REST list, full': () => text(base, `/api/mc-dm-downloads/?category_id=${id}&with=full`),
      'GraphQL list': () => gql(base, LIST, { c: id }),
      'GraphQL connection': () => gql(base, CONNECTION, { c: id }),
      'GraphQL category page': () => gql(base, PAGE, { c: id }),
    });
    const others = (base: string): Record<string, Read> => ({
      'REST all downloads': () => text(base, '/api/mc-dm-downloads/?per_page=100'),
      'GraphQL all downloads': () => gql(base, '{ downloads(perPage: 100) { nodes { title tagLine } } }', {}),
    });

    /**
     * B's lists that a write in A keeps. A new download, a deletion or a move also rewrites A's row in the category
     * table (its count of visible downloads), which the lists that show categories (REST with=full, the GraphQL list
     * and category page here) read whole: those are computed again, the others stay.
     */
    const keptOf = (lists: Record<string, Read>, countsChange: boolean) => {
      const out = { ...lists };
      if (countsChange) {
        delete out['REST list, full'];
        delete out['GraphQL list'];
        delete out['GraphQL category page'];
      }
      return out;
    };

    /**
     * One rule: `write` changes category A's downloads; each of A's lists must then `show` it at once (checked on its
     * text); the kept lists of B stay (keptOf), and the lists of all downloads are computed again.
     */
    const rule = async (write: () => Promise<unknown>, show: (list: string) => void, countsChange = false) => {
      const a = listsOf(t.url, c.a);
      const b = keptOf(listsOf(t.url, c.b), countsChange);
      const keptB = await prime(t, b);
      await prime(t, a);
      const all = others(t.url);
      await prime(t, all);
      await write();
      for (const [name, list] of Object.entries(await allMissed(t, a))) {
        try {
          show(list);
        } catch (err) {
          throw new Error(`${name}: ${(err as Error).message}`);
        }
      }
      await allKept(t, b, keptB);
      await allMissed(t, all);
    };

    it('versions: a write bumps the versions of the categories of the rows it changed, both sides of a move', async () => {
      const keys = ['download', 'download#counts', 'download_total'];
      const at = async () => {
        const { of } = await t.app.db.cacheVersions({ downloads: [-c.a, -c.b] });
        const out: Record<string, number> = {};
        for (const k of keys) {
          out[k] = Number(of.get(k) ?? 0);
          for (const [name, x] of [
            ['A', -c.a],
            ['B', -c.b],
            ['0', 0],
          ] as const)
            out[`${k}@${name}`] = Number(of.get(`${k}@${x}`));
        }
        return out;
      };
      const changed = (x: Record<string, number>, y: Record<string, number>) =>
        Object.keys(y)
          .filter((k) => x[k] !== y[k])
          .sort();
      let before = await at();
      await t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = $1 WHERE id = $2', 'versions', d.Oasis);
      let after = await at();
      expect(changed(before, after)).toEqual(['download', 'download@A']);
      before = after;
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "downloadCount" = "downloadCount" + 1 WHERE id = $1',
        d.Knight,
      );
      after = await at();
      expect(changed(before, after)).toEqual(['download#counts', 'download#counts@B']);
      before = after;
      // A move names both categories, in the rows and in the totals.
      await t.prisma.$executeRawUnsafe('UPDATE download SET "categoryId" = $1 WHERE id = $2', c.b, d.Canyon);
      after = await at();
      expect(changed(before, after)).toEqual([
        'download',
        'download@A',
        'download@B',
        'download_total',
        'download_total@A',
        'download_total@B',
      ]);
      await t.prisma.$executeRawUnsafe('UPDATE download SET "categoryId" = $1 WHERE id = $2', c.a, d.Canyon);
    });

    it('the lists of a category hold its own downloads only, not its subcategories', async () => {
      const lists = listsOf(t.url, c.a);
      for (const [name, read] of Object.entries(lists)) {
        const list = await read();
        expect(list, name).toContain('Oasis');
        expect(list, name).not.toContain('Dune');
      }
    });

    it("an edit in A (REST, then GraphQL) is seen in A's lists at once and keeps B's", async () => {
      await rule(
        () =>
          t.rest('PUT', `/api/mc-dm-downloads/${d.Oasis}/`, { key: owner.key, form: { tag_line: 'edited by REST' } }),
        (list) => expect(list).toContain('edited by REST'),
      );
      await rule(
        () =>
          t.gqlOk(
            'mutation($id: Int!) { updateDownload(input: { downloadId: $id, tagLine: "edited by GraphQL" }) { download { title } } }',
            { id: d.Canyon },
          ),
        (list) => expect(list).toContain('edited by GraphQL'),
      );
    });

    it("a new download in A, and one deleted, are seen in A's lists and totals at once and keep B's", async () => {
      await rule(
        () => create(c.a, 'Glacier'),
        (list) => expect(list).toContain('Glacier'),
        true,
      );
      await rule(
        () => t.rest('DELETE', `/api/mc-dm-downloads/${d.Glacier}/?hard=1`),
        (list) => expect(list).not.toContain('Glacier'),
        true,
      );
    });

    it("a download moved out of A is gone from A's lists and in B's at once", async () => {
      await create(c.a, 'Volcano');
      const a = listsOf(t.url, c.a);
      const b = listsOf(t.url, c.b);
      await prime(t, a);
      await prime(t, b);
      await t.rest('PUT', `/api/mc-dm-downloads/${d.Volcano}/`, { form: { category_id: c.b } });
      for (const [name, read] of Object.entries(a)) expect(await read(), name).not.toContain('Volcano');
      for (const [name, read] of Object.entries(b)) expect(await read(), name).toContain('Volcano');
    });

    it("writes made in SQL (not through the service) are seen in A's lists and keep B's", async () => {
      await rule(
        () => t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = $1 WHERE id = $2', 'sql tag line', d.Oasis),
        (list) => expect(list).toContain('sql tag line'),
      );
    });

    it(`counters in A (downloads counted) show in its lists at most ${LIMITS.readCacheCounterLagMs} ms late, and never evict B's`, async () => {
      const keptB = await prime(t, listsOf(t.url, c.b));
      const count = async () => {
        const rows = JSON.parse(await listsOf(t.url, c.a)['REST list']!()).downloads as {
          download_id: number;
          download_count: number;
        }[];
        return rows.find((r) => r.download_id === d.Oasis)!.download_count;
      };
      const before = await count();
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "downloadCount" = "downloadCount" + 1 WHERE id = $1',
        d.Oasis,
      );
      await new Promise((r) => setTimeout(r, LIMITS.readCacheCounterLagMs + 100));
      expect(await count()).toBe(before + 1);
      await allKept(t, listsOf(t.url, c.b), keptB);
    });

    it("a list that reaches other categories' downloads is kept by table: an edit there is seen in it at once", async () => {
      // The subcategory's list, with its parent's downloads (A's): an edit in A must show in it.
      const wide = () =>
        gql(
          t.url,
          'query($c: Int!) { downloads(categoryId: $c) { nodes { title category { parent { downloads(first: 50) { nodes { tagLine } } } } } } }',
          { c: c.child },
        );
      await prime(t, { wide });
      await t.rest('PUT', `/api/mc-dm-downloads/${d.Oasis}/`, {
        key: owner.key,
        form: { tag_line: 'seen in the wide list' },
      });
      expect(await wide()).toContain('seen in the wide list');
    });

    it.skipIf(kind !== 'postgres')(
      "another instance on the same database sees writes in A within a second and keeps B's lists",
      async () => {
        const second = await secondInstance(t);
        try {
          const a = listsOf(second.url, c.a);
          const b = listsOf(second.url, c.b);
          const writes: [string, () => Promise<unknown>, boolean][] = [
            [
              'tag on the second instance',
              () =>
                t.rest('PUT', `/api/mc-dm-downloads/${d.Oasis}/`, {
                  key: owner.key,
                  form: { tag_line: 'tag on the second instance' },
                }),
              false,
            ],
            ['Tundra', () => create(c.a, 'Tundra'), true],
            [
              'raw there',
              () =>
                t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = $1 WHERE id = $2', 'raw there', d.Canyon),
              false,
            ],
          ];
          for (const [marker, write, countsChange] of writes) {
            const keptB = await prime(second, keptOf(b, countsChange));
            await prime(second, a);
            await write();
            const written = Date.now();
            for (const [name, read] of Object.entries(a)) expect(await read(), name).toContain(marker);
            expect(Date.now() - written).toBeLessThan(1000);
            await allKept(second, keptOf(b, countsChange), keptB);
          }
        } finally {
          await second.close();
        }
      },
    );
  });
});

describe("which answers are lists of one category's downloads", () => {
  let scopes: ReturnType<typeof cacheScopes>;
  beforeAll(() => {
    scopes = cacheScopes();
  });
  const of = (query: string, variables: Record<string, unknown> = {}) => scopes.of(query, variables);

  it('the REST list with category_id is scoped through its document, unless it searches or asks for facets', () => {
    const scope = (variables: Record<string, unknown>) => scopes.ofRoute('GET', '/api/mc-dm-downloads/', variables);
    expect(scope({ categoryId: 7, full: false })).toEqual({ category: 7 });
    expect(scope({ categoryId: 7, full: true, perPage: 5, page: 2, downloadState: 'VISIBLE' })).toEqual({
      category: 7,
    });
    expect(scope({ categoryId: 7, full: false, facets: false })).toEqual({ category: 7 });
    // Facets count the matches of other categories; a search reads its own tables and ranks.
    expect(scope({ categoryId: 7, full: false, facets: true })).toBeUndefined();
    expect(scope({ categoryId: 7, full: false, q: 'maps' })).toBeUndefined();
    expect(scope({ full: false })).toBeUndefined();
    expect(scope({ categoryId: null, full: false })).toBeUndefined();
    expect(scope({ categoryId: 0, full: false })).toBeUndefined();
  });

  it('GraphQL: a list or connection by categoryId, followed only through its downloads', () => {
    expect(
      of('query($c: Int!) { downloads(categoryId: $c) { nodes { title owner { username } } } }', { c: 3 }),
    ).toEqual({ category: 3 });
    expect(
      of('{ downloadsConnection(categoryId: 3) { totalCount edges { node { title category { title } } } } }'),
    ).toEqual({ category: 3 });
    // Left out by a directive: scoped when the variable leaves it out (or by a literal).
    const q = 'query($w: Boolean!) { downloads(categoryId: 3) { nodes { title stats @include(if: $w) { views } } } }';
    expect(of(q, { w: false })).toEqual({ category: 3 });
    expect(of(q, { w: true })).toBeUndefined();
    expect(of('{ downloads(categoryId: 3) { nodes { title stats @skip(if: true) { views } } } }')).toEqual({
      category: 3,
    });
    expect(
      of('query($w: Boolean = true) { downloads(categoryId: 3) { nodes { stats @skip(if: $w) { views } } } }'),
    ).toEqual({ category: 3 });
    // A category's page: the category and its own downloads (in a fragment on the category too).
    expect(
      of('{ category(categoryId: 3) { title downloads(first: 5) { nodes { title owner { username } } } } }'),
    ).toEqual({ category: 3 });
    expect(
      of(
        '{ category(categoryId: 3) { ...P } } fragment P on Category { children { nodes { title } } downloads { totalCount } }',
      ),
    ).toEqual({ category: 3 });
  });

  it('GraphQL: anything that may read another category answers by table', () => {
    const none = [
      '{ downloads(categoryId: 3) { nodes { category { downloads { nodes { title } } } } } }',
      '{ downloads(categoryId: 3) { nodes { category { parent { downloads { nodes { title } } } } } } }',
      '{ downloads(categoryId: 3) { nodes { title } } other: downloads(categoryId: 4) { nodes { title } } }',
      '{ downloads(categoryId: 3) { nodes { title } } download(downloadId: 4) { title } }',
      '{ downloads(categoryId: 3, q: "maps") { nodes { title } } }',
      '{ downloads(categoryId: 3) { facets { categories { count } } } }',
      '{ downloads(categoryId: 3) { nodes { reviews { nodes { message } } } } }',
      '{ downloads { nodes { title } } }',
      '{ downloadsConnection { nodes { title } } }',
      'query($w: Boolean!) { downloads(categoryId: 3) { nodes { stats @include(if: $w) { views } } } }',
      // Downloads of the category's parent or children, or of its downloads' categories.
      '{ category(categoryId: 3) { parent { downloads { nodes { title } } } } }',
      '{ category(categoryId: 3) { children { nodes { downloads { nodes { title } } } } } }',
      '{ category(categoryId: 3) { downloads { nodes { category { downloads { nodes { title } } } } } } }',
      '{ category(categoryId: 3) { title } downloads(categoryId: 4) { nodes { title } } }',
    ];
    for (const query of none) expect(of(query, {}), query).toBeUndefined();
  });
});
