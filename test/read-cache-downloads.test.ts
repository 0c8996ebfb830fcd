// The read cache per download (src/http/cache-scope.ts, migration 20270120000000_download_scoped_versions): an answer
// about one download (the download by id, its comments, versions and files, on both faces) is evicted by writes about
// that download only, while lists keep being evicted by any write to their tables. One test per rule, both databases,
// both faces: an edit, a comment, a version, a file (through the service and in SQL) of download A is seen by the next
// read of A, on this instance and on another one, and leaves the kept answers about B given again (cache hits).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOWNLOAD_VERSIONS_KEPT, DOWNLOAD_VERSIONS_MAX, PRUNED } from '../src/db/cache-versions.js';
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
  describe('answers about one download', () => {
    let t: TestApp;
    let category: number;
    let owner: { userId: number; key: string };
    /** Two downloads, each with a version (its current one), a link-only file and a comment. */
    const d = { a: { id: 0, version: 0, file: 0, gid: '' }, b: { id: 0, version: 0, file: 0, gid: '' } };

    beforeAll(async () => {
      t = await startTestApp(kind, {
        cacheSeconds: 300,
        commentFloodSeconds: 0,
        externalUrlAllowPrivate: true,
        readCacheAdmitWindow: 0,
      });
      // Views are counted off: the reads below would count views, whose flush (every 30 s) changes a download's
      // view_count and so its answers, which a slow run would see as a write (views are tested in views.test.ts).
      t.app.services.views = undefined;
      category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Scoped' } })).body.category
        .category_id;
      owner = await t.user('scoped-owner');
      for (const which of ['a', 'b'] as const) {
        const made = (
          await t.rest('POST', '/api/mc-dm-downloads/', {
            key: owner.key,
            form: { category_id: category, title: `Download ${which}` },
          })
        ).body.download;
        d[which].id = made.download_id;
        d[which].version = made.current_version_id;
        d[which].file = (
          await t.rest('POST', '/api/mc-dm-files/', {
            key: owner.key,
            form: {
              version_id: made.current_version_id,
              external_url: `http://127.0.0.1:9/${which}.zip`,
              link_only: 1,
            },
          })
        ).body.file.file_id;
        await t.rest('POST', '/api/mc-dm-comments/', {
          key: owner.key,
          form: { download_id: made.download_id, message: `first on ${which}` },
        });
        d[which].gid = (
          await t.gqlOk('query($id: Int!) { download(downloadId: $id) { id } }', { id: made.download_id })
        ).download.id;
      }
    });
    afterAll(async () => {
      await t?.close();
    });

    const text = restText;
    const gql = gqlText;
    const DOWNLOAD = `query($id: Int!) { download(downloadId: $id) { title tagLine downloadCount
      comments(first: 5) { nodes { message } } versions { versionString fileList { displayName } } } }`;
    const NODE = 'query($id: ID!) { node(id: $id) { ... on Download { title tagLine } } }';
    const COMMENTS = 'query($id: Int!) { comments(downloadId: $id) { nodes { message } pagination { total } } }';
    const FILES = 'query($v: Int!) { filesConnection(versionId: $v) { totalCount nodes { displayName } } }';

    /** Every read about one download, on both faces, against the instance at `base`. */
    const about = (base: string, x: { id: number; version: number; gid: string }): Record<string, Read> => ({
      'REST get': () => text(base, `/api/mc-dm-downloads/${x.id}/?with=full`),
      'REST comments': () => text(base, `/api/mc-dm-comments/?download_id=${x.id}`),
      'REST versions': () => text(base, `/api/mc-dm-versions/?download_id=${x.id}&with=full`),
      'REST files': () => text(base, `/api/mc-dm-files/?version_id=${x.version}`),
      'GraphQL download': () => gql(base, DOWNLOAD, { id: x.id }),
      'GraphQL node': () => gql(base, NODE, { id: x.gid }),
      'GraphQL comments': () => gql(base, COMMENTS, { id: x.id }),
      'GraphQL files': () => gql(base, FILES, { v: x.version }),
    });
    const lists = (base: string): Record<string, Read> => ({
      'REST downloads': () => text(base, `/api/mc-dm-downloads/?category_id=${category}`),
      'REST all comments': () => text(base, '/api/mc-dm-comments/'),
      'GraphQL downloads': () => gql(base, '{ downloads(perPage: 50) { nodes { title } } }', {}),
      'GraphQL all comments': () => gql(base, '{ comments(perPage: 50) { nodes { message } } }', {}),
      'REST all files': () => text(base, '/api/mc-dm-files/'),
      'REST all versions': () => text(base, '/api/mc-dm-versions/'),
    });

    /**
     * One rule: `write` changes download A; `seen` names reads of A that must show `marker` at once; `evicted` names the
     * lists that must be computed again. Every kept answer about B stays.
     */
    const rule = async (write: () => Promise<unknown>, seen: string[], marker: string, evicted: string[]) => {
      const b = about(t.url, d.b);
      const a = about(t.url, d.a);
      const l = lists(t.url);
      const keptB = await prime(t, b);
      await prime(t, a);
      await prime(t, l);
      await write();
      for (const name of seen) expect(await a[name]!(), name).toContain(marker);
      await allKept(t, b, keptB);
      await allMissed(t, l, evicted);
    };

    it('versions: a write bumps the versions of the downloads it touched, and its tables', async () => {
      const keys = ['download', 'download#counts', 'comment', 'comment_total', 'file', 'version'];
      const at = async () => {
        const { of } = await t.app.db.cacheVersions({ downloads: [d.a.id, d.b.id] });
        const out: Record<string, number> = {};
        for (const k of keys) {
          out[k] = Number(of.get(k) ?? 0);
          for (const x of [d.a.id, d.b.id, 0])
            out[`${k}@${x === d.a.id ? 'A' : x === d.b.id ? 'B' : 0}`] = Number(of.get(`${k}@${x}`));
        }
        return out;
      };
      const changed = (a: Record<string, number>, b: Record<string, number>) =>
        Object.keys(b)
          .filter((k) => a[k] !== b[k])
          .sort();
      let before = await at();
      await t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = $1 WHERE id = $2', 'versions', d.a.id);
      let after = await at();
      expect(changed(before, after)).toEqual(['download', 'download@A']);
      before = after;
      await t.prisma.$executeRawUnsafe('UPDATE download SET "viewCount" = "viewCount" + 1 WHERE id = $1', d.b.id);
      after = await at();
      expect(changed(before, after)).toEqual(['download#counts', 'download#counts@B']);
      before = after;
      await t.rest('POST', '/api/mc-dm-comments/', { key: owner.key, form: { download_id: d.b.id, message: 'bumps' } });
      after = await at();
      expect(changed(before, after)).toEqual(
        expect.arrayContaining(['comment', 'comment@B', 'comment_total', 'comment_total@B']),
      );
      expect(changed(before, after).filter((k) => k.endsWith('@A') || k.endsWith('@0'))).toEqual([]);
      before = after;
      // One file of A's version, by its version: the trigger finds the download through the version.
      await t.prisma.$executeRawUnsafe('UPDATE file SET "displayLabel" = $1 WHERE id = $2', 'bumped', d.a.file);
      after = await at();
      expect(changed(before, after)).toEqual(['file', 'file@A']);
    });

    it('an edit of A (REST, then GraphQL) is seen in A at once and keeps every answer about B', async () => {
      await rule(
        () =>
          t.rest('PUT', `/api/mc-dm-downloads/${d.a.id}/`, { key: owner.key, form: { tag_line: 'edited by REST' } }),
        ['REST get', 'GraphQL download', 'GraphQL node'],
        'edited by REST',
        ['REST downloads', 'GraphQL downloads'],
      );
      await rule(
        () =>
          t.gqlOk(
            'mutation($id: Int!) { updateDownload(input: { downloadId: $id, title: "Retitled A" }) { download { title } } }',
            { id: d.a.id },
          ),
        ['REST get', 'GraphQL download', 'GraphQL node'],
        'Retitled A',
        ['REST downloads', 'GraphQL downloads'],
      );
    });

    it('a comment on A is seen in A at once and keeps every answer about B', async () => {
      await rule(
        () =>
          t.rest('POST', '/api/mc-dm-comments/', {
            key: owner.key,
            form: { download_id: d.a.id, message: 'second on a' },
          }),
        ['REST comments', 'GraphQL comments', 'GraphQL download'],
        'second on a',
        ['REST all comments', 'GraphQL all comments'],
      );
      await rule(
        () =>
          t.gqlOk(
            'mutation($id: Int!) { createComment(input: { downloadId: $id, message: "third on a" }) { comment { commentId } } }',
            { id: d.a.id },
            owner.key,
          ),
        ['REST comments', 'GraphQL comments'],
        'third on a',
        ['REST all comments', 'GraphQL all comments'],
      );
    });

    it('a version of A is seen in A at once and keeps every answer about B', async () => {
      await rule(
        () =>
          t.rest('POST', '/api/mc-dm-versions/', {
            key: owner.key,
            json: { download_id: d.a.id, version_string: '2.0.0' },
          }),
        ['REST versions', 'GraphQL download'],
        '2.0.0',
        ['REST all versions'],
      );
    });

    it("a file of A added or edited is seen in A's files at once and keeps every answer about B", async () => {
      await rule(
        () =>
          t.rest('POST', '/api/mc-dm-files/', {
            key: owner.key,
            form: { version_id: d.a.version, external_url: 'http://127.0.0.1:9/added.zip', link_only: 1 },
          }),
        ['REST files', 'GraphQL files'],
        'added.zip',
        ['REST all files'],
      );
      await rule(
        () => t.rest('PUT', `/api/mc-dm-files/${d.a.file}/`, { key: owner.key, form: { display_label: 'Relabelled' } }),
        ['REST files', 'GraphQL files'],
        'Relabelled',
        ['REST all files'],
      );
    });

    it('writes made in SQL (not through the service) are seen in A and keep every answer about B', async () => {
      const sql = [
        ['UPDATE download SET "tagLine" = $1 WHERE id = $2', 'sql tag line', ['REST get', 'GraphQL node']],
        [
          'UPDATE comment SET message = $1 WHERE "downloadId" = $2',
          'sql message',
          ['REST comments', 'GraphQL comments'],
        ],
        ['UPDATE file SET "displayLabel" = $1 WHERE "versionId" = $2', 'sql label', ['REST files', 'GraphQL files']],
        ['UPDATE version SET "versionString" = $1 WHERE "downloadId" = $2', 'sql-version', ['REST versions']],
      ] as const;
      for (const [statement, marker, seen] of sql) {
        const target = statement.includes('"versionId"') ? d.a.version : d.a.id;
        await rule(() => t.prisma.$executeRawUnsafe(statement, marker, target), [...seen], marker, []);
      }
    });

    it(`counters of A (downloads counted) show in A at most ${LIMITS.readCacheCounterLagMs} ms late, and never evict B`, async () => {
      const b = about(t.url, d.b);
      const keptB = await prime(t, b);
      const count = async () => JSON.parse(await about(t.url, d.a)['REST get']!()).download.download_count as number;
      const before = await count();
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "downloadCount" = "downloadCount" + 1 WHERE id = $1',
        d.a.id,
      );
      await new Promise((r) => setTimeout(r, LIMITS.readCacheCounterLagMs + 100));
      expect(await count()).toBe(before + 1);
      await allKept(t, b, keptB);
    });

    it('a query about A that reaches other downloads is kept by table: an edit of B is seen in it at once', async () => {
      // Its category's downloads (B among them) and a version's node: neither stays within A, so both answer by table.
      const wide = () =>
        gql(
          t.url,
          'query($id: Int!) { download(downloadId: $id) { title category { downloads(first: 50) { nodes { title } } } } }',
          { id: d.a.id },
        );
      const versionNode = () =>
        gql(t.url, 'query($id: ID!) { node(id: $id) { ... on Version { versionString } } }', {
          id: Buffer.from(`Version:${d.b.version}`).toString('base64url'),
        });
      await prime(t, { wide, versionNode });
      await t.rest('PUT', `/api/mc-dm-downloads/${d.b.id}/`, { key: owner.key, form: { title: 'B renamed' } });
      await t.prisma.$executeRawUnsafe(
        'UPDATE version SET "versionString" = $1 WHERE id = $2',
        'b-renamed',
        d.b.version,
      );
      expect(await wide()).toContain('B renamed');
      expect(await versionNode()).toContain('b-renamed');
    });

    it.skipIf(kind !== 'postgres')(
      'another instance on the same database sees writes of A within a second and keeps its answers about B',
      async () => {
        const second = await secondInstance(t);
        try {
          const b = about(second.url, d.b);
          const a = about(second.url, d.a);
          const writes: [string, () => Promise<unknown>, string[]][] = [
            [
              'second instance tag',
              () =>
                t.rest('PUT', `/api/mc-dm-downloads/${d.a.id}/`, {
                  key: owner.key,
                  form: { tag_line: 'second instance tag' },
                }),
              ['REST get', 'GraphQL node'],
            ],
            [
              'comment seen there',
              () =>
                t.rest('POST', '/api/mc-dm-comments/', {
                  key: owner.key,
                  form: { download_id: d.a.id, message: 'comment seen there' },
                }),
              ['REST comments', 'GraphQL comments'],
            ],
            [
              'raw there',
              () =>
                t.prisma.$executeRawUnsafe(
                  'UPDATE file SET "displayLabel" = $1 WHERE "versionId" = $2',
                  'raw there',
                  d.a.version,
                ),
              ['REST files', 'GraphQL files'],
            ],
            [
              '3.0.0',
              () =>
                t.rest('POST', '/api/mc-dm-versions/', {
                  key: owner.key,
                  json: { download_id: d.a.id, version_string: '3.0.0' },
                }),
              ['REST versions', 'GraphQL download'],
            ],
          ];
          for (const [marker, write, seen] of writes) {
            const keptB = await prime(second, b);
            await prime(second, a);
            await write();
            const written = Date.now();
            for (const name of seen) expect(await a[name]!(), name).toContain(marker);
            expect(Date.now() - written).toBeLessThan(1000);
            await allKept(second, b, keptB);
          }
        } finally {
          await second.close();
        }
      },
    );

    it('keeps the versions of downloads bounded: past the most, the oldest go and per-download answers are evicted', async () => {
      const b = about(t.url, d.b);
      await t.app.db.compactCacheVersions();
      const rows = async () =>
        Number(
          (await t.prisma.$queryRawUnsafe<{ n: bigint }[]>('SELECT count(*) AS n FROM cache_download_versions'))[0]!.n,
        );
      expect(await rows()).toBeGreaterThan(0);
      expect(await rows()).toBeLessThanOrEqual(DOWNLOAD_VERSIONS_MAX);
      await prime(t, b);
      // Old rows for downloads that do not exist, as many writes long ago would leave.
      await t.prisma.$executeRawUnsafe(
        `INSERT INTO cache_download_versions (download_id, table_name, version, changed_at)
         SELECT 1000000 + g, 'download', 1, now() - interval '1 day' FROM generate_series(1, ${DOWNLOAD_VERSIONS_MAX}) g`,
      );
      const pruned = (await t.app.db.cacheVersions()).of.get(PRUNED) ?? '0';
      await t.app.db.compactCacheVersions();
      expect(await rows()).toBe(DOWNLOAD_VERSIONS_KEPT);
      expect(Number((await t.app.db.cacheVersions()).of.get(PRUNED))).toBe(Number(pruned) + 1);
      // The newest rows are the ones kept: B's among them.
      expect(
        Number(
          (
            await t.prisma.$queryRawUnsafe<{ n: bigint }[]>(
              'SELECT count(*) AS n FROM cache_download_versions WHERE download_id < 1000000',
            )
          )[0]!.n,
        ),
      ).toBeGreaterThan(0);
      await allMissed(t, b, ['REST get', 'GraphQL download']);
      await t.app.db.compactCacheVersions(); // under the most: nothing more goes
      expect(await rows()).toBe(DOWNLOAD_VERSIONS_KEPT);
    });

    it('a write that changes nothing keeps all; rows whose download is unknown evict every answer reading them', async () => {
      const b = about(t.url, d.b);
      const keptB = await prime(t, b);
      await t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = "tagLine" WHERE id = $1', d.a.id);
      await allKept(t, b, keptB);
      // A version of A with a file, deleted in SQL: the file goes by cascade after its version, so its trigger cannot
      // tell whose it was (download 0): every answer that read files is computed again, the others stay.
      const extra = (
        await t.rest('POST', '/api/mc-dm-versions/', {
          key: owner.key,
          json: { download_id: d.a.id, version_string: '9' },
        })
      ).body.version.version_id;
      await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        form: { version_id: extra, external_url: 'http://127.0.0.1:9/gone.zip', link_only: 1 },
      });
      const again = await prime(t, b);
      const before = (await t.app.db.cacheVersions()).of.get('file@0');
      await t.prisma.$executeRawUnsafe('DELETE FROM version WHERE id = $1', extra);
      expect((await t.app.db.cacheVersions()).of.get('file@0')).not.toBe(before);
      await allMissed(t, b, ['REST files', 'GraphQL files']);
      await allKept(t, { 'REST comments': b['REST comments']! }, again);
    });
  });
});

describe('which answers are about one download', () => {
  let scopes: ReturnType<typeof cacheScopes>;
  beforeAll(() => {
    scopes = cacheScopes();
  });
  const of = (query: string, variables: Record<string, unknown> = {}) => scopes.of(query, variables);

  it('the REST get of a download and its comments, versions and files lists are scoped through their documents', () => {
    const scope = (method: string, path: string, variables: Record<string, unknown>) =>
      scopes.ofRoute(method, path, variables);
    expect(scope('GET', '/api/mc-dm-downloads/:download_id/', { downloadId: 7, full: true })).toEqual({ download: 7 });
    expect(scope('GET', '/api/mc-dm-comments/', { downloadId: 7, full: false })).toEqual({ download: 7 });
    expect(scope('GET', '/api/mc-dm-versions/', { downloadId: 7, full: true })).toEqual({ download: 7 });
    expect(scope('GET', '/api/mc-dm-files/', { versionId: 9, full: true })).toEqual({ version: 9 });
    // The same lists without their download (or version) are about every download; a hash search too.
    expect(scope('GET', '/api/mc-dm-comments/', { full: false })).toBeUndefined();
    expect(scope('GET', '/api/mc-dm-versions/', { full: false })).toBeUndefined();
    expect(scope('GET', '/api/mc-dm-files/', { versionId: 9, hash: ['sha256:00'], full: false })).toBeUndefined();
    expect(scope('GET', '/api/mc-dm-downloads/', { full: false })).toBeUndefined();
  });

  it('GraphQL: one download by id, node or list argument, followed only through its own rows', () => {
    expect(of('query($id: Int!) { download(downloadId: $id) { title owner { username } } }', { id: 3 })).toEqual({
      download: 3,
    });
    expect(
      of('{ download(downloadId: 3) { ...F } } fragment F on Download { comments { nodes { message } } }'),
    ).toEqual({
      download: 3,
    });
    const gid = Buffer.from('Download:3').toString('base64url');
    expect(of('query($id: ID!) { node(id: $id) { ... on Download { title } } }', { id: gid })).toEqual({ download: 3 });
    expect(
      of(
        'query($id: Int!) { a: download(downloadId: $id) { title } comments(downloadId: $id) { nodes { message } } }',
        {
          id: 3,
        },
      ),
    ).toEqual({ download: 3 });
    expect(of('{ filesConnection(versionId: 4) { nodes { filename version { versionString } } } }')).toEqual({
      version: 4,
    });
  });

  it('GraphQL: anything that may read another download answers by table', () => {
    const none = [
      '{ download(downloadId: 3) { category { downloads { nodes { title } } } } }',
      '{ download(downloadId: 3) { currentVersion { resolvedDependencies { versions { versionId } } } } }',
      '{ download(downloadId: 3) { reviews { nodes { message } } } }',
      '{ download(downloadId: 3) { title } other: download(downloadId: 4) { title } }',
      '{ download(downloadId: 3) { title } downloads { nodes { title } } }',
      '{ download(downloadId: 3) { title } viewer { userId } }',
      '{ node(id: "Q2F0ZWdvcnk6Mw") { id } }', // a category's id
      '{ node(id: "not an id") { id } }',
      '{ comments { nodes { message } } }',
      '{ download(downloadId: 0) { title } }',
      'query($id: Int) { download(downloadId: $id) { title } }',
      '{ download(downloadId: 3) { ... on Download { category { downloads { nodes { title } } } } } }',
      'mutation { deleteDownload(input: { downloadId: 3 }) { success } }',
    ];
    for (const q of none) expect(of(q, { id: null }), q).toBeUndefined();
  });
});
