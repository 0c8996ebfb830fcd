// List totals come from counter tables the database keeps with triggers (each module's store.ts, src/db/totals.ts).
// These tests drive every write path that can change a counted row — the API on both faces, the jobs and domain
// functions the CLI and schedulers call, raw SQL (moderation approval, undelete, version removal, bulk statements,
// TRUNCATE), the bench seed, simultaneous writers — and after each step check that (1) every counter equals count(*)
// grouped the same way and (2) `pagination.total` (REST and GraphQL) and `totalCount` (root and nested connections)
// equal count(*) for the list's filters, before the per-row permission check.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  forEachDatabase,
  freshPostgres,
  migratedDatabase,
  startTestApp,
  SUPER_KEY,
  type TestApp,
} from './helpers/app.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { migrate, readMigrations } from '../src/db/migrate.js';
import { purgeExpiredDownloads } from '../src/jobs/purge.js';
import { deleteCategory } from '../src/modules/categories/rules.js';
import { seed, FULL_SIZE } from '../bench/seed.js';

vi.setConfig({ testTimeout: 120_000 });

type Query = <R = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<R[]>;

/** Each counter table against count(*) over its table, grouped the same way (zero rows are never kept per key). */
async function expectCountersExact(query: Query, step: string): Promise<void> {
  const pairs: [string, string, string][] = [
    [
      'download_total',
      `SELECT "categoryId" AS a, "prefixKey" AS b, state::text AS c, n::text AS n FROM download_total`,
      `SELECT "categoryId" AS a, coalesce("prefixId", 0) AS b, state::text AS c, count(*)::text AS n FROM download GROUP BY 1, 2, 3`,
    ],
    [
      'comment_total',
      `SELECT "downloadId" AS a, state::text AS b, n::text AS n FROM comment_total`,
      `SELECT "downloadId" AS a, state::text AS b, count(*)::text AS n FROM comment GROUP BY 1, 2`,
    ],
    [
      'comment_total_all',
      `SELECT state::text AS a, stripe AS b, n::text AS n FROM comment_total_all WHERE n <> 0`,
      `SELECT state::text AS a, ("downloadId" % 64)::smallint AS b, count(*)::text AS n FROM comment GROUP BY 1, 2`,
    ],
    [
      'file_total',
      `SELECT "versionId" AS a, n::text AS n FROM file_total`,
      `SELECT "versionId" AS a, count(*)::text AS n FROM file WHERE NOT "isDeleted" GROUP BY 1`,
    ],
    [
      'file_total_all',
      `SELECT stripe AS a, n::text AS n FROM file_total_all WHERE n <> 0`,
      `SELECT ("versionId" % 64)::smallint AS a, count(*)::text AS n FROM file WHERE NOT "isDeleted" GROUP BY 1`,
    ],
  ];
  for (const [name, counter, truth] of pairs) {
    const norm = (rows: Record<string, unknown>[]) =>
      rows.map((r) => JSON.stringify(Object.values(r).map(String))).sort();
    expect(norm(await query(counter)), `${step}: ${name}`).toEqual(norm(await query(truth)));
  }
}

forEachDatabase((kind) => {
  describe('every write path keeps the counters and the list totals equal to count(*)', () => {
    let t: TestApp;
    let owner: { userId: number; key: string };
    let prefix = 0;
    const ids = { a: 0, b: 0, strict: 0, child: 0, d1: 0, d2: 0, v1: 0 };
    const query: Query = (sql, params) => t.app.db.query(sql, params);
    const count = async (sql: string, params: unknown[] = []) =>
      Number((await query<{ n: unknown }>(`SELECT count(*) AS n FROM ${sql}`, params))[0]!.n);

    beforeAll(async () => {
      t = await startTestApp(kind, { commentFloodSeconds: 0 });
      owner = await t.user('totals-owner');
    });
    afterAll(async () => {
      await t?.close();
    });

    const rest = async (method: string, path: string, opts: Parameters<TestApp['rest']>[2] = {}) => {
      const r = await t.rest(method, path, opts);
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(200);
      return r.body;
    };
    const gql = (q: string, v: Record<string, unknown> = {}, key: string = SUPER_KEY) => t.gqlOk(q, v, key);
    const restTotal = async (path: string, q: Record<string, string | number>, key = SUPER_KEY) =>
      (await rest('GET', path, { key, query: { ...q, per_page: 1 } })).pagination.total as number;

    /** Counters, then every list's total on both faces, against count(*). */
    async function check(step: string): Promise<void> {
      await expectCountersExact(query, step);
      const { a, d1, v1 } = ids;
      const since = '2000-01-01T00:00:00Z';
      const expected: [string, Promise<number>, Promise<number>][] = [
        // downloads: a super-user key lists every state; a user only visible ones
        ['downloads, all states', restTotal('/api/mc-dm-downloads/', {}), count('download')],
        [
          'downloads, visible',
          restTotal('/api/mc-dm-downloads/', {}, owner.key),
          count(`download WHERE state = 'visible'`),
        ],
        [
          'downloads, state moderated',
          restTotal('/api/mc-dm-downloads/', { download_state: 'moderated' }),
          count(`download WHERE state = 'moderated'`),
        ],
        [
          'downloads of a category',
          restTotal('/api/mc-dm-downloads/', { category_id: a }, owner.key),
          count(`download WHERE "categoryId" = $1 AND state = 'visible'`, [a]),
        ],
        [
          'downloads of a category and prefix',
          restTotal('/api/mc-dm-downloads/', { category_id: a, prefix_id: prefix }),
          count(`download WHERE "categoryId" = $1 AND "prefixId" = $2`, [a, prefix]),
        ],
        [
          'downloads without a prefix',
          restTotal('/api/mc-dm-downloads/', { prefix_id: 0 }),
          count(`download WHERE "prefixId" IS NULL`),
        ],
        [
          'downloads since',
          restTotal('/api/mc-dm-downloads/', { since }),
          count(`download WHERE "lastUpdate" >= $1::timestamp`, [since]),
        ],
        ['categories', restTotal('/api/mc-dm-categories/', {}), count('category')],
      ];
      if (d1) {
        expected.push(
          [
            'comments of a download, all states',
            restTotal('/api/mc-dm-comments/', { download_id: d1 }),
            count(`comment WHERE "downloadId" = $1`, [d1]),
          ],
          [
            'comments of a download, visible',
            restTotal('/api/mc-dm-comments/', { download_id: d1 }, owner.key),
            count(`comment WHERE "downloadId" = $1 AND state = 'visible'`, [d1]),
          ],
          [
            'comments since',
            restTotal('/api/mc-dm-comments/', { download_id: d1, since }),
            count(`comment WHERE "downloadId" = $1`, [d1]),
          ],
        );
      }
      expected.push(['every comment', restTotal('/api/mc-dm-comments/', {}), count('comment')]);
      if (v1)
        expected.push([
          'files of a version',
          restTotal('/api/mc-dm-files/', { version_id: v1 }),
          count(`file WHERE "versionId" = $1 AND NOT "isDeleted"`, [v1]),
        ]);
      expected.push(['every file', restTotal('/api/mc-dm-files/', {}), count(`file WHERE NOT "isDeleted"`)]);

      // The GraphQL face: page-numbered lists, root connections and nested connections in one operation.
      const g = await gql(
        `query($a: Int!, $p: Int!, $d: Int!, $v: Int!, $hasD: Boolean!, $hasV: Boolean!) {
        all: downloads(perPage: 1) { pagination { total } }
        allConn: downloadsConnection(first: 1) { totalCount }
        cat: downloads(categoryId: $a, prefixId: $p, perPage: 1) { pagination { total } }
        catConn: downloadsConnection(categoryId: $a, prefixId: $p, first: 1) { totalCount }
        nested: category(categoryId: $a) { downloads(prefixId: $p, first: 1) { totalCount } }
        none: downloadsConnection(prefixId: 0, first: 1) { totalCount }
        categories(perPage: 1) { pagination { total } }
        categoriesConnection(first: 1) { totalCount }
        comments(downloadId: $d, perPage: 1) @include(if: $hasD) { pagination { total } }
        commentsConnection(downloadId: $d, first: 1) @include(if: $hasD) { totalCount }
        download(downloadId: $d) @include(if: $hasD) { comments(first: 1) { totalCount } }
        everyComment: commentsConnection(first: 1) { totalCount }
        files(versionId: $v, perPage: 1) @include(if: $hasV) { pagination { total } }
        filesConnection(versionId: $v, first: 1) @include(if: $hasV) { totalCount }
        everyFile: files(perPage: 1) { pagination { total } }
        everyFileConn: filesConnection(first: 1) { totalCount }
      }`,
        { a, p: prefix, d: d1 || 1, v: v1 || 1, hasD: d1 > 0, hasV: v1 > 0 },
      );
      const byCat = count(`download WHERE "categoryId" = $1 AND "prefixId" = $2`, [a, prefix]);
      expected.push(
        ['gql downloads', Promise.resolve(g.all.pagination.total), count('download')],
        ['gql downloadsConnection', Promise.resolve(g.allConn.totalCount), count('download')],
        ['gql downloads of a category and prefix', Promise.resolve(g.cat.pagination.total), byCat],
        ['gql downloadsConnection of a category and prefix', Promise.resolve(g.catConn.totalCount), byCat],
        ['gql Category.downloads', Promise.resolve(g.nested.downloads.totalCount), byCat],
        [
          'gql downloadsConnection without a prefix',
          Promise.resolve(g.none.totalCount),
          count(`download WHERE "prefixId" IS NULL`),
        ],
        ['gql categories', Promise.resolve(g.categories.pagination.total), count('category')],
        ['gql categoriesConnection', Promise.resolve(g.categoriesConnection.totalCount), count('category')],
        ['gql every comment', Promise.resolve(g.everyComment.totalCount), count('comment')],
        ['gql every file', Promise.resolve(g.everyFile.pagination.total), count(`file WHERE NOT "isDeleted"`)],
        [
          'gql filesConnection, every file',
          Promise.resolve(g.everyFileConn.totalCount),
          count(`file WHERE NOT "isDeleted"`),
        ],
      );
      if (d1) {
        const ofD = count(`comment WHERE "downloadId" = $1`, [d1]);
        expected.push(
          ['gql comments', Promise.resolve(g.comments.pagination.total), ofD],
          ['gql commentsConnection', Promise.resolve(g.commentsConnection.totalCount), ofD],
          ['gql Download.comments', Promise.resolve(g.download.comments.totalCount), ofD],
        );
      }
      if (v1) {
        const ofV = count(`file WHERE "versionId" = $1 AND NOT "isDeleted"`, [v1]);
        expected.push(
          ['gql files', Promise.resolve(g.files.pagination.total), ofV],
          ['gql filesConnection', Promise.resolve(g.filesConnection.totalCount), ofV],
        );
        const nested = await gql(
          `query($d: Int!) { download(downloadId: $d) { versionsConnection(first: 100) { nodes { versionId files(first: 1) { totalCount } } } } }`,
          { d: d1 },
        );
        for (const v of nested.download?.versionsConnection.nodes ?? []) {
          expected.push([
            `gql Version.files of ${v.versionId}`,
            Promise.resolve(v.files.totalCount),
            count(`file WHERE "versionId" = $1 AND NOT "isDeleted"`, [v.versionId]),
          ]);
        }
      }
      for (const [name, got, want] of expected) expect(await got, `${step}: ${name}`).toBe(await want);
    }

    const createRest = async (categoryId: number, form: Record<string, any> = {}, key = owner.key) =>
      (
        await rest('POST', '/api/mc-dm-downloads/', {
          key,
          form: { category_id: categoryId, title: 'Counted', ...form },
        })
      ).download;
    const createGql = async (categoryId: number, input: Record<string, unknown> = {}) =>
      (
        await gql(
          `mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId currentVersionId downloadState } } }`,
          { i: { categoryId, title: 'Counted', ...input } },
          owner.key,
        )
      ).createDownload.download;
    const comment = async (downloadId: number, face: 'rest' | 'gql', key = owner.key): Promise<number> =>
      face === 'rest'
        ? (await rest('POST', '/api/mc-dm-comments/', { key, form: { download_id: downloadId, message: 'Hello' } }))
            .comment.comment_id
        : (
            await gql(
              `mutation($i: CreateCommentInput!) { createComment(input: $i) { comment { commentId } } }`,
              { i: { downloadId, message: 'Hi' } },
              key,
            )
          ).createComment.comment.commentId;
    async function upload(versionId: number, name: string): Promise<number> {
      const form = new FormData();
      form.append('version_id', String(versionId));
      form.append('file', new Blob([new Uint8Array(Buffer.from(`bytes of ${name}`))]), name);
      const res = await fetch(`${t.url}/api/mc-dm-files/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': owner.key },
        body: form,
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).toBe(200);
      return body.file.file_id;
    }

    it('create, update, move, soft and hard delete, restore, approval, undelete, purge, category delete, raw SQL', async () => {
      await expectCountersExact(query, 'empty');
      ids.a = (await rest('POST', '/api/mc-dm-categories/', { form: { title: 'A' } })).category.category_id;
      ids.b = (await rest('POST', '/api/mc-dm-categories/', { form: { title: 'B' } })).category.category_id;
      ids.strict = (await rest('POST', '/api/mc-dm-categories/', { form: { title: 'Strict' } })).category.category_id;
      await rest('PUT', `/api/mc-dm-categories/${ids.strict}/`, {
        form: { require_approval: 1, require_comment_approval: 1 },
      });
      ids.child = (
        await rest('POST', '/api/mc-dm-categories/', { form: { title: 'Child', parent_category_id: ids.b } })
      ).category.category_id;
      prefix = (await gql(`mutation { createPrefix(input: { title: "P" }) { prefix { prefixId } } }`)).createPrefix
        .prefix.prefixId;
      for (const c of [ids.a, ids.b])
        await gql(`mutation { assignPrefix(input: { prefixId: ${prefix}, categoryId: ${c} }) { ok } }`);
      await check('categories');

      const d1 = await createRest(ids.a);
      ids.d1 = d1.download_id;
      ids.v1 = d1.current_version_id;
      await check('create (REST)');
      ids.d2 = (await createGql(ids.a, { prefixId: prefix })).downloadId;
      await check('create with a prefix (GraphQL)');
      const waiting = await createRest(ids.strict);
      expect(waiting.download_state).toBe('moderated');
      await check('create awaiting approval');

      const c1 = await comment(ids.d1, 'rest');
      const c2 = await comment(ids.d1, 'gql');
      await comment(ids.d2, 'rest');
      const held = await comment(waiting.download_id, 'gql');
      await check('comments (REST, GraphQL, awaiting approval)');

      const f1 = await upload(ids.v1, 'one.txt');
      const f2 = await upload(ids.v1, 'two.txt');
      await upload(ids.v1, 'three.txt');
      await check('files');
      const v2 = (
        await gql(
          `mutation($i: CreateVersionInput!) { createVersion(input: $i) { version { versionId } } }`,
          { i: { downloadId: ids.d1 } },
          owner.key,
        )
      ).createVersion.version.versionId;
      await upload(v2, 'four.txt');
      await check('a second version with a file');

      // updates: a move (REST), a prefix set and dropped (GraphQL), an edit that changes no counted column
      await rest('PUT', `/api/mc-dm-downloads/${ids.d1}/`, { key: SUPER_KEY, form: { category_id: ids.b } });
      await check('move A → B');
      await rest('PUT', `/api/mc-dm-downloads/${ids.d1}/`, {
        key: SUPER_KEY,
        form: { category_id: ids.a, prefix_id: prefix },
      });
      await check('move back with a prefix');
      await gql(
        `mutation { updateDownload(input: { downloadId: ${ids.d1}, prefixId: 0, title: "Renamed" }) { download { downloadId } } }`,
        {},
        owner.key,
      );
      await check('prefix dropped (GraphQL)');

      // soft delete and restore; moderation approval and withdrawal (no API: raw SQL, as an operator would)
      await rest('DELETE', `/api/mc-dm-downloads/${ids.d2}/`, { key: owner.key });
      await check('soft delete (REST)');
      await gql(`mutation { restoreDownload(input: { downloadId: ${ids.d2} }) { download { downloadState } } }`);
      await check('restore (GraphQL)');
      await gql(`mutation { deleteDownload(input: { downloadId: ${ids.d2} }) { success } }`, {}, owner.key);
      await check('soft delete (GraphQL)');
      await gql(`mutation { restoreDownload(input: { downloadId: ${ids.d2} }) { download { downloadState } } }`);
      await query(`UPDATE download SET state = 'visible' WHERE id = $1`, [waiting.download_id]);
      await query(`UPDATE comment SET state = 'visible' WHERE id = $1`, [held]);
      await check('approved (SQL)');
      await query(`UPDATE download SET state = 'moderated' WHERE id = $1`, [waiting.download_id]);
      await query(`UPDATE comment SET state = 'moderated' WHERE id = $1`, [held]);
      await check('approval withdrawn (SQL)');

      // comments: soft delete, undelete, edit, hard delete
      await rest('DELETE', `/api/mc-dm-comments/${c1}/`, { key: SUPER_KEY });
      await check('comment soft-deleted (REST)');
      await query(`UPDATE comment SET state = "stateBeforeDelete", "stateBeforeDelete" = NULL WHERE id = $1`, [c1]);
      await check('comment undeleted (SQL)');
      await rest('PUT', `/api/mc-dm-comments/${c1}/`, { key: owner.key, form: { message: 'Edited' } });
      await gql(`mutation { deleteComment(input: { commentId: ${c2}, hard: true }) { success } }`);
      await check('comment edited, another hard-deleted (GraphQL)');

      // files: soft delete (REST), hard delete (GraphQL), undelete and a move between versions (SQL)
      await rest('DELETE', `/api/mc-dm-files/${f1}/`, { key: owner.key });
      await check('file soft-deleted');
      await gql(`mutation { deleteFile(input: { fileId: ${f2}, hard: true }) { success } }`);
      await check('file hard-deleted');
      await query(`UPDATE file SET "isDeleted" = false, "deletedAt" = NULL, "isPrimary" = false WHERE id = $1`, [f1]);
      await check('file undeleted (SQL)');
      await query(`UPDATE file SET "versionId" = $1, "isPrimary" = false WHERE id = $2`, [v2, f1]);
      await check('file moved to another version (SQL)');
      await query(`UPDATE download SET "currentVersionId" = $1 WHERE id = $2`, [ids.v1, ids.d1]);
      await query(`DELETE FROM version WHERE id = $1`, [v2]);
      await check('version removed with its files (SQL)');

      // hard delete cascades to versions, files and comments
      const doomed = await createRest(ids.a);
      await upload(doomed.current_version_id, 'doomed.txt');
      await comment(doomed.download_id, 'rest');
      await check('a download to hard-delete');
      await rest('DELETE', `/api/mc-dm-downloads/${doomed.download_id}/`, { key: SUPER_KEY, query: { hard: 1 } });
      await check('hard delete (REST)');
      const doomed2 = await createGql(ids.a);
      await comment(doomed2.downloadId, 'gql');
      await gql(`mutation { deleteDownload(input: { downloadId: ${doomed2.downloadId}, hard: true }) { success } }`);
      await check('hard delete (GraphQL)');

      // the purge job
      const old = await createRest(ids.b);
      await upload(old.current_version_id, 'old.txt');
      await comment(old.download_id, 'rest');
      await rest('DELETE', `/api/mc-dm-downloads/${old.download_id}/`, { key: owner.key });
      await check('soft-deleted, to purge');
      const purged = await purgeExpiredDownloads(
        t.prisma,
        t.app.services.storage,
        1,
        new Date(Date.now() + 3 * 86_400_000),
      );
      expect(purged).toContain(old.download_id);
      await check('purge job');

      // category deletes: reassign (the default policy, REST) and cascade (the domain function the CLI calls)
      const inChild = await createRest(ids.child);
      await comment(inChild.download_id, 'rest');
      await rest('DELETE', `/api/mc-dm-categories/${ids.child}/`, { key: SUPER_KEY, query: { hard: 1 } });
      await check('category deleted, its downloads reassigned to the parent');
      const gone = (await rest('POST', '/api/mc-dm-categories/', { form: { title: 'Gone' } })).category.category_id;
      const sub = (
        await rest('POST', '/api/mc-dm-categories/', { form: { title: 'Gone child', parent_category_id: gone } })
      ).category.category_id;
      for (const c of [gone, sub]) {
        const d = await createRest(c);
        await upload(d.current_version_id, 'x.txt');
        await comment(d.download_id, 'gql');
      }
      await check('a subtree to delete');
      await deleteCategory(t.prisma, { ...t.config, categoryDeletePolicy: 'cascade' }, 0, gone, true);
      await check('category subtree deleted with its downloads (cascade)');
    });

    it('simultaneous creates, moves, comments, deletes and restores (both faces)', async () => {
      const made = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          i % 2
            ? createGql(i % 4 < 2 ? ids.a : ids.b).then((d) => d.downloadId)
            : createRest(i % 4 < 2 ? ids.a : ids.b).then((d) => d.download_id as number),
        ),
      );
      await check('10 simultaneous creates');
      await Promise.all(
        made.map((id, i) =>
          i % 2
            ? gql(
                `mutation { updateDownload(input: { downloadId: ${id}, categoryId: ${i % 4 < 2 ? ids.b : ids.a}, prefixId: ${prefix} }) { download { downloadId } } }`,
              )
            : rest('PUT', `/api/mc-dm-downloads/${id}/`, {
                key: SUPER_KEY,
                form: { category_id: i % 4 < 2 ? ids.b : ids.a },
              }),
        ),
      );
      await check('10 simultaneous moves, crossing');
      await Promise.all(
        [...made, ...made.slice(0, 5).map(() => ids.d1)].map((id, i) => comment(id, i % 2 ? 'gql' : 'rest')),
      );
      await check('15 simultaneous comments, 5 on one download');
      await Promise.all(
        made.map((id, i) =>
          i % 2
            ? gql(`mutation { deleteDownload(input: { downloadId: ${id}, hard: ${i % 4 === 1} }) { success } }`)
            : rest('DELETE', `/api/mc-dm-downloads/${id}/`, { key: SUPER_KEY, query: i % 4 === 2 ? { hard: 1 } : {} }),
        ),
      );
      await check('10 simultaneous soft and hard deletes');
      const soft = (await query<{ id: number }>(`SELECT id FROM download WHERE state = 'deleted'`)).map((r) => r.id);
      await Promise.all(
        soft.map((id) =>
          gql(`mutation { restoreDownload(input: { downloadId: ${id} }) { download { downloadState } } }`),
        ),
      );
      await check('simultaneous restores');
    });

    it('bulk SQL statements and TRUNCATE', async () => {
      await query(
        `INSERT INTO download ("categoryId", "userId", title, state, "prefixId")
                   SELECT CASE WHEN g % 2 = 0 THEN $1::int ELSE $2::int END, $3::int, 'Bulk ' || g,
                          (CASE WHEN g % 7 = 0 THEN 'moderated' ELSE 'visible' END)::"DownloadState", CASE WHEN g % 3 = 0 THEN $4::int END
                   FROM generate_series(1, 1000) g`,
        [ids.a, ids.b, owner.userId, prefix],
      );
      await query(`INSERT INTO version ("downloadId") SELECT id FROM download WHERE title LIKE 'Bulk %'`);
      await query(
        `INSERT INTO file ("versionId", filename, "isDeleted") SELECT v.id, 'f' || n, n = 3 FROM version v JOIN download d ON d.id = v."downloadId", generate_series(1, 3) n WHERE d.title LIKE 'Bulk %'`,
      );
      await query(
        `INSERT INTO comment ("downloadId", "userId", message, state) SELECT d.id, $1::int, 'm', (CASE WHEN n = 2 THEN 'moderated' ELSE 'visible' END)::"CommentState" FROM download d, generate_series(1, 2) n WHERE d.title LIKE 'Bulk %'`,
        [owner.userId],
      );
      await check('bulk inserts');
      await query(
        `UPDATE download SET state = 'visible', "viewCount" = "viewCount" + 1 WHERE title LIKE 'Bulk %' AND id % 5 = 0`,
      );
      await query(`UPDATE download SET "categoryId" = $1 WHERE title LIKE 'Bulk %' AND id % 3 = 0`, [ids.strict]);
      await query(`UPDATE comment SET state = 'deleted' WHERE id % 4 = 0`);
      await query(`UPDATE file SET "isDeleted" = NOT "isDeleted" WHERE id % 3 = 0`);
      await check('bulk updates');
      await query(`UPDATE download SET "currentVersionId" = NULL WHERE title LIKE 'Bulk %' AND id % 2 = 0`);
      await query(`DELETE FROM download WHERE title LIKE 'Bulk %' AND id % 2 = 0`);
      await query(`DELETE FROM comment WHERE id % 5 = 0`);
      await check('bulk deletes');
      await query(`TRUNCATE comment, file CASCADE`);
      await check('TRUNCATE of comments and files');
      await query(`TRUNCATE download CASCADE`);
      ids.d1 = 0;
      ids.v1 = 0;
      await check('TRUNCATE of downloads');
    });
  });

  describe('the counters of databases made before them, and of the bench seed', () => {
    /** An empty database (the migrations are the test's), or with `migrated` one made from the run's template. */
    async function withDatabase(body: (db: Database) => Promise<void>, opts: { migrated?: boolean } = {}) {
      const fresh = opts.migrated
        ? await migratedDatabase(kind)
        : kind === 'postgres'
          ? await freshPostgres().then((p) => ({ target: { url: p.url }, drop: p.drop }))
          : { target: { memory: true as const }, drop: async () => {} };
      const db = await openDatabase(fresh.target);
      try {
        await body(db);
      } finally {
        await db.close();
        await fresh.drop();
      }
    }

    it('the migration backfills the counters of an existing catalogue', async () => {
      await withDatabase(async (db) => {
        const all = readMigrations();
        const at = all.findIndex((m) => m.name.endsWith('_list_totals'));
        await migrate(db, all.slice(0, at));
        await db.session(async (s) => {
          await s.exec(`INSERT INTO user_group (name) VALUES ('g');
            INSERT INTO "user" (username, "primaryGroupId") SELECT 'u', id FROM user_group;
            INSERT INTO category (title) SELECT 'c' || g FROM generate_series(1, 3) g;
            INSERT INTO prefix (title) VALUES ('p');
            INSERT INTO download ("categoryId", "userId", title, state, "prefixId")
              SELECT 1 + g % 3, 1, 't', (ARRAY['visible','moderated','deleted','draft'])[1 + g % 4]::"DownloadState", CASE WHEN g % 2 = 0 THEN 1 END
              FROM generate_series(1, 200) g;
            INSERT INTO version ("downloadId") SELECT id FROM download;
            INSERT INTO file ("versionId", filename, "isDeleted") SELECT id, 'f', id % 3 = 0 FROM version;
            INSERT INTO comment ("downloadId", "userId", message, state)
              SELECT d.id, 1, 'm', (ARRAY['visible','moderated','deleted'])[1 + (d.id + n) % 3]::"CommentState" FROM download d, generate_series(1, 3) n;`);
        });
        expect(await migrate(db)).toEqual(all.slice(at).map((m) => m.name));
        await expectCountersExact((sql, p) => db.query(sql, p), 'backfill');
      });
    });

    it('the bench seed leaves exact counters', async () => {
      await withDatabase(
        async (db) => {
          await seed(db, SUPER_KEY, {
            ...FULL_SIZE,
            users: 20,
            downloads: 600,
            filesPerDownload: 2,
            commentsPerDownload: 3,
          });
          await expectCountersExact((sql, p) => db.query(sql, p), 'seed');
          const [row] = await db.query<{ n: unknown }>(`SELECT sum(n) AS n FROM download_total`);
          expect(Number(row!.n)).toBe(600);
        },
        { migrated: true },
      );
    });
  });
});
