// Comments end to end through REST and GraphQL, on every database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const FIELDS = [
  'comment_id',
  'download_id',
  'user_id',
  'username',
  'comment_date',
  'message',
  'comment_state',
  'last_edit_date',
  'edit_count',
  'is_visible',
];

forEachDatabase((kind) => {
  let t: TestApp;
  let author: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let mod: { userId: number; key: string };
  let cat: number;
  let dl: number;
  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    author = await t.user('author');
    reader = await t.user('reader');
    mod = await t.user('moderator', { isModerator: true });
    cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Talk' } })).body.category.category_id;
    dl = await download('Discussed');
  });
  afterAll(async () => {
    await t?.close();
  });

  async function download(title: string, category = cat): Promise<number> {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: author.key,
      form: { category_id: category, title },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.download.download_id;
  }
  const post = async (message: string, key = author.key, downloadId = dl) => {
    const r = await t.rest('POST', '/api/mc-dm-comments/', { key, form: { download_id: downloadId, message } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.comment;
  };

  describe('create', () => {
    it('posts a visible comment with every spec field', async () => {
      const r = await t.rest('POST', '/api/mc-dm-comments/', {
        key: reader.key,
        form: { download_id: dl, message: ' Nice [b]work[/b] ' },
        query: { with: 'full' },
      });
      expect(r.status).toBe(200);
      const c = r.body.comment;
      expect(Object.keys(c)).toEqual([...FIELDS, 'can_view', 'can_edit', 'can_delete']);
      expect(c).toMatchObject({
        download_id: dl,
        user_id: reader.userId,
        username: 'reader',
        message: 'Nice [b]work[/b]',
        comment_state: 'visible',
        last_edit_date: 0,
        edit_count: 0,
        is_visible: true,
        can_view: true,
        can_edit: true,
        can_delete: true,
      });
      expect(Math.abs(c.comment_date - Date.now() / 1000)).toBeLessThan(60);
    });

    it('is moderated when the category requires comment approval, unless the visitor bypasses it', async () => {
      const strict = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Strict talk' } })).body.category
        .category_id;
      await t.rest('PUT', `/api/mc-dm-categories/${strict}/`, { form: { require_comment_approval: 1 } });
      const d = await download('Strictly discussed', strict);
      expect((await post('pending', reader.key, d)).comment_state).toBe('moderated');
      expect((await post('approved', mod.key, d)).comment_state).toBe('visible');
    });

    it('refuses bad input and missing permissions, creating nothing', async () => {
      const before = await t.prisma.comment.count();
      const cases: [Record<string, any>, number, string, any][] = [
        [{}, 400, 'required_input_missing', { missing: ['download_id', 'message'] }],
        [{ download_id: dl }, 400, 'required_input_missing', { missing: ['message'] }],
        [{ download_id: dl, message: '   ' }, 400, 'required_input_missing', { missing: ['message'] }],
        [{ download_id: 'one', message: 'x' }, 400, 'invalid_input', { field: 'download_id' }],
        [{ download_id: 99999, message: 'x' }, 404, 'mc_dm_api_error.download_not_found', {}],
      ];
      for (const [form, status, code, params] of cases) {
        const r = await t.rest('POST', '/api/mc-dm-comments/', { key: reader.key, form });
        expect(r.status, JSON.stringify(form)).toBe(status);
        expect(r.body.errors[0]).toMatchObject({ code, params });
      }
      const closed = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Quiet' } })).body.category
        .category_id;
      const d = await download('No comments', closed);
      await t.gqlOk(
        `mutation { setCategoryPermission(input: { categoryId: ${closed}, group: "registered", permission: "comment", value: DENY }) { ok } }`,
      );
      const noComment = await t.rest('POST', '/api/mc-dm-comments/', {
        key: reader.key,
        form: { download_id: d, message: 'x' },
      });
      expect(noComment.status).toBe(403);
      await t.gqlOk(
        `mutation { setCategoryPermission(input: { categoryId: ${closed}, group: "registered", permission: "viewComments", value: DENY }) { ok } }`,
      );
      expect(
        (await t.rest('POST', '/api/mc-dm-comments/', { key: reader.key, form: { download_id: d, message: 'x' } })).body
          .errors[0].code,
      ).toBe('do_not_have_permission');
      const readOnly = await t.key('USER', ['mc_dm_download:read'], reader.userId);
      expect(
        (await t.rest('POST', '/api/mc-dm-comments/', { key: readOnly, form: { download_id: dl, message: 'x' } })).body
          .errors[0],
      ).toMatchObject({ code: 'api_scope_missing', params: { scope: 'mc_dm_download:write' } });
      expect(await t.prisma.comment.count()).toBe(before);
    });
  });

  describe('flood control', () => {
    it('one comment per COMMENT_FLOOD_SECONDS per user: 429 with Retry-After; moderators exempt', async () => {
      const f = await startTestApp(kind, { commentFloodSeconds: 30 });
      try {
        const u = await f.user('fast');
        const m = await f.user('fastmod', { isModerator: true });
        const c = (await f.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Flood' } })).body.category
          .category_id;
        const d = (await f.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'x' } }))
          .body.download.download_id;
        expect(
          (await f.rest('POST', '/api/mc-dm-comments/', { key: u.key, form: { download_id: d, message: 'one' } }))
            .status,
        ).toBe(200);
        const second = await f.rest('POST', '/api/mc-dm-comments/', {
          key: u.key,
          form: { download_id: d, message: 'two' },
        });
        expect(second.status).toBe(429);
        expect(second.body.errors[0].code).toBe('mc_dm_api_error.rate_limited');
        const wait = Number(second.headers.get('retry-after'));
        expect(wait).toBeGreaterThan(0);
        expect(wait).toBeLessThanOrEqual(30);
        expect(second.body.errors[0].params.retry_after).toBe(wait);
        const gql = await f.gql(
          `mutation { createComment(input: { downloadId: ${d}, message: "three" }) { comment { commentId } } }`,
          {},
          u.key,
        );
        // an executed operation answers 200 under application/json, its error's status under graphql-response+json
        expect(gql.status).toBe(200);
        expect(gql.codes).toEqual(['mc_dm_api_error.rate_limited']);
        // Mutation fields are nullable, so the refused one leaves data { createComment: null }: 200 under
        // graphql-response+json too (a response with data is 2xx), the code in the error.
        const strict = await f.gql(
          `mutation { createComment(input: { downloadId: ${d}, message: "three" }) { comment { commentId } } }`,
          {},
          u.key,
          { accept: 'application/graphql-response+json' },
        );
        expect(strict.status).toBe(200);
        expect(strict.data).toEqual({ createComment: null });
        expect(strict.codes).toEqual(['mc_dm_api_error.rate_limited']);
        expect(await f.prisma.comment.count({ where: { userId: u.userId } })).toBe(1);
        // simultaneous posts: exactly one passes
        const u2 = await f.user('racer');
        const results = await Promise.all(
          [1, 2, 3].map((i) =>
            f.rest('POST', '/api/mc-dm-comments/', { key: u2.key, form: { download_id: d, message: `race ${i}` } }),
          ),
        );
        expect(results.map((r) => r.status).sort()).toEqual([200, 429, 429]);
        for (const i of [1, 2])
          expect(
            (
              await f.rest('POST', '/api/mc-dm-comments/', {
                key: m.key,
                form: { download_id: d, message: `mod ${i}` },
              })
            ).status,
          ).toBe(200);
        // a super-user key acting as the throttled user is exempt too
        const asU = { 'Forum-Api-User': String(u.userId) };
        for (const i of [1, 2])
          expect(
            (
              await f.rest('POST', '/api/mc-dm-comments/', {
                headers: asU,
                form: { download_id: d, message: `super ${i}` },
              })
            ).status,
          ).toBe(200);
        expect(await f.prisma.comment.count({ where: { userId: u.userId } })).toBe(3);
      } finally {
        await f.close();
      }
    });
  });

  describe('list', () => {
    let d: number;
    let ids: number[];
    beforeAll(async () => {
      d = await download('Listed comments');
      ids = [];
      for (const [i, msg] of ['first', 'second', 'third'].entries()) {
        const c = await post(msg, reader.key, d);
        await t.prisma.comment.update({
          where: { id: c.comment_id },
          data: { commentDate: new Date(Date.UTC(2026, 0, 1 + i)) },
        });
        ids.push(c.comment_id);
      }
      await t.prisma.comment.update({ where: { id: ids[0] }, data: { lastEditDate: new Date(Date.UTC(2026, 5, 1)) } });
      const hidden = await post('pending one', reader.key, d);
      await t.prisma.comment.update({
        where: { id: hidden.comment_id },
        data: { state: 'moderated', commentDate: new Date(Date.UTC(2026, 0, 10)) },
      });
    });
    const messages = (r: any) => r.body.comments.map((c: any) => c.message);

    it('needs download_id for user keys; lists visible comments newest first', async () => {
      const missing = await t.rest('GET', '/api/mc-dm-comments/', { key: reader.key });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0]).toMatchObject({
        code: 'required_input_missing',
        params: { missing: ['download_id'] },
      });
      const r = await t.rest('GET', '/api/mc-dm-comments/', { key: reader.key, query: { download_id: d } });
      expect(messages(r)).toEqual(['third', 'second', 'first']);
      expect(r.body.pagination).toEqual({ page: 1, per_page: 20, total: 3, last_page: 1 });
      expect(Object.keys(r.body.comments[0])).toEqual(FIELDS);
    });

    it('super-user keys may omit download_id and see every state', async () => {
      const r = await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: d } });
      expect(messages(r)).toEqual(['pending one', 'third', 'second', 'first']);
      const all = await t.rest('GET', '/api/mc-dm-comments/', { query: { per_page: 100 } });
      expect(all.status).toBe(200);
      expect(all.body.pagination.total).toBe(await t.prisma.comment.count());
    });

    it('orders by last_edit_date, filters by since, pages', async () => {
      expect(
        messages(
          await t.rest('GET', '/api/mc-dm-comments/', {
            key: reader.key,
            query: { download_id: d, order: 'last_edit_date' },
          }),
        )[0],
      ).toBe('first');
      expect(
        messages(
          await t.rest('GET', '/api/mc-dm-comments/', {
            key: reader.key,
            query: { download_id: d, order: 'comment_date', direction: 'asc', per_page: 2, page: 2 },
          }),
        ),
      ).toEqual(['third']);
      expect(
        messages(
          await t.rest('GET', '/api/mc-dm-comments/', {
            key: reader.key,
            query: { download_id: d, since: '2026-01-02T00:00:00Z' },
          }),
        ),
      ).toEqual(['third', 'second']);
    });

    it('refuses malformed parameters and hidden or unknown downloads', async () => {
      for (const [query, field] of [
        [{ since: 'last week' }, 'since'],
        [{ order: 'title' }, 'order'],
        [{ download_id: '1.5' }, 'download_id'],
      ] as const) {
        const r = await t.rest('GET', '/api/mc-dm-comments/', {
          key: reader.key,
          query: { download_id: d, ...query } as any,
        });
        expect(r.status, JSON.stringify(query)).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field } });
      }
      expect(
        (await t.rest('GET', '/api/mc-dm-comments/', { key: reader.key, query: { download_id: 99999 } })).status,
      ).toBe(404);
      const gone = await download('Soon deleted');
      await post('on a deleted download', reader.key, gone);
      await t.rest('DELETE', `/api/mc-dm-downloads/${gone}/`, { key: author.key });
      const hidden = await t.rest('GET', '/api/mc-dm-comments/', { key: reader.key, query: { download_id: gone } });
      expect(hidden.status).toBe(403);
      expect(hidden.body.errors[0].code).toBe('do_not_have_permission');
    });
  });

  describe('get', () => {
    it('404 for unknown ids; a moderated comment is visible to its author and moderators only', async () => {
      expect((await t.rest('GET', '/api/mc-dm-comments/99999/')).body.errors[0].code).toBe(
        'mc_dm_api_error.comment_not_found',
      );
      const c = await post('waiting for approval', reader.key);
      await t.prisma.comment.update({ where: { id: c.comment_id }, data: { state: 'moderated' } });
      expect(
        (await t.rest('GET', `/api/mc-dm-comments/${c.comment_id}/`, { key: reader.key })).body.comment.comment_state,
      ).toBe('moderated');
      expect((await t.rest('GET', `/api/mc-dm-comments/${c.comment_id}/`, { key: author.key })).status).toBe(403);
      const asMod = await t.rest('GET', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: mod.key,
        query: { with: 'full' },
      });
      expect(asMod.body.comment).toMatchObject({ is_visible: false, can_edit: true, can_delete: true });
    });
  });

  describe('update', () => {
    it('counts edits; history only when someone else edits or the author is late; moderators read it', async () => {
      const c = await post('original', reader.key);
      const own = await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: reader.key,
        form: { message: 'fixed typo' },
      });
      expect(own.body.comment).toMatchObject({ message: 'fixed typo', edit_count: 1 });
      expect(own.body.comment.last_edit_date).toBeGreaterThan(0);
      expect(await t.prisma.commentEdit.count({ where: { commentId: c.comment_id } })).toBe(0);

      const byMod = await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: mod.key,
        form: { message: 'moderated text' },
      });
      expect(byMod.body.comment.edit_count).toBe(2);
      await t.prisma.comment.update({
        where: { id: c.comment_id },
        data: { commentDate: new Date(Date.now() - 6 * 60_000) },
      });
      await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, { key: reader.key, form: { message: 'late edit' } });
      const history = await t.gqlOk(
        `{ comment(commentId: ${c.comment_id}) { editCount edits { oldMessage editorId } } }`,
        {},
        mod.key,
      );
      expect(history.comment.editCount).toBe(3);
      expect(history.comment.edits).toEqual([
        { oldMessage: 'moderated text', editorId: reader.userId },
        { oldMessage: 'fixed typo', editorId: mod.userId },
      ]);
      expect(
        (await t.gql(`{ comment(commentId: ${c.comment_id}) { edits { oldMessage } } }`, {}, reader.key)).codes,
      ).toEqual(['do_not_have_permission']);
    });

    it('refuses an empty message with 422 message_empty, others with 403, and changes nothing', async () => {
      const c = await post('stays', reader.key);
      for (const message of ['', '   ']) {
        const r = await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, { key: reader.key, form: { message } });
        expect(r.status).toBe(422);
        expect(r.body.errors[0].code).toBe('mc_dm_api_error.message_empty');
      }
      const missing = await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, { key: reader.key });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0]).toMatchObject({
        code: 'required_input_missing',
        params: { missing: ['message'] },
      });
      expect(
        (await t.rest('PUT', `/api/mc-dm-comments/${c.comment_id}/`, { key: author.key, form: { message: 'hijack' } }))
          .status,
      ).toBe(403);
      expect(await t.prisma.comment.findUniqueOrThrow({ where: { id: c.comment_id } })).toMatchObject({
        message: 'stays',
        editCount: 0,
      });
      const gql = await t.gql(
        `mutation { updateComment(input: { commentId: ${c.comment_id}, message: " " }) { comment { message } } }`,
        {},
        reader.key,
      );
      expect(gql.codes).toEqual(['mc_dm_api_error.message_empty']);
    });
  });

  describe('delete', () => {
    it('soft delete sets comment_state=deleted and logs the reason for moderators', async () => {
      const c = await post('regret', reader.key);
      expect((await t.rest('DELETE', `/api/mc-dm-comments/${c.comment_id}/`, { key: author.key })).status).toBe(403);
      const r = await t.rest('DELETE', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: reader.key,
        form: { reason: 'Changed my mind' },
      });
      expect(r.body).toEqual({ success: true });
      expect((await t.prisma.comment.findUniqueOrThrow({ where: { id: c.comment_id } })).state).toBe('deleted');
      expect(await t.prisma.moderatorLog.findFirst({ where: { contentId: c.comment_id } })).toMatchObject({
        action: 'comment.soft_deleted',
        contentType: 'comment',
        reason: 'Changed my mind',
        userId: reader.userId,
      });
      expect((await t.rest('GET', `/api/mc-dm-comments/${c.comment_id}/`, { key: reader.key })).status).toBe(403);
      expect((await t.rest('GET', `/api/mc-dm-comments/${c.comment_id}/`)).body.comment.comment_state).toBe('deleted');
    });

    it('hard delete needs mc_dm_download:delete_hard and removes the row', async () => {
      const c = await post('spam', reader.key);
      const noScope = await t.key('USER', ['mc_dm_download:read', 'mc_dm_download:write'], mod.userId);
      const refused = await t.rest('DELETE', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: noScope,
        query: { hard: 1 },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.errors[0]).toMatchObject({
        code: 'api_scope_missing',
        params: { scope: 'mc_dm_download:delete_hard' },
      });
      expect(await t.prisma.comment.count({ where: { id: c.comment_id } })).toBe(1);
      const r = await t.rest('DELETE', `/api/mc-dm-comments/${c.comment_id}/`, {
        key: mod.key,
        query: { hard: 1, reason: 'Spam' },
      });
      expect(r.body).toEqual({ success: true });
      expect(await t.prisma.comment.count({ where: { id: c.comment_id } })).toBe(0);
      expect(
        await t.prisma.moderatorLog.findFirst({ where: { contentId: c.comment_id, action: 'comment.hard_deleted' } }),
      ).toMatchObject({ reason: 'Spam', userId: mod.userId });
      expect((await t.rest('DELETE', `/api/mc-dm-comments/${c.comment_id}/`, { key: mod.key })).status).toBe(404);
    });
  });

  describe('GraphQL face', () => {
    it('creates, lists, updates and deletes with the same rules', async () => {
      const created = await t.gqlOk(
        `mutation { createComment(input: { downloadId: ${dl}, message: "via gql" }) { comment { commentId username commentState isVisible } } }`,
        {},
        reader.key,
      );
      const c = created.createComment.comment;
      expect(c).toMatchObject({ username: 'reader', commentState: 'VISIBLE', isVisible: true });
      const list = await t.gqlOk(
        `{ comments(downloadId: ${dl}, perPage: 1) { nodes { message } pagination { perPage } } }`,
        {},
        reader.key,
      );
      expect(list.comments.nodes).toEqual([{ message: 'via gql' }]);
      expect((await t.gql(`{ comments { nodes { message } } }`, {}, reader.key)).codes).toEqual([
        'required_input_missing',
      ]);
      expect(
        (
          await t.gqlOk(
            `mutation { updateComment(input: { commentId: ${c.commentId}, message: "edited" }) { comment { message editCount } } }`,
            {},
            reader.key,
          )
        ).updateComment.comment,
      ).toEqual({ message: 'edited', editCount: 1 });
      expect(
        (await t.gql(`mutation { deleteComment(input: { commentId: ${c.commentId} }) { success } }`, {}, author.key))
          .codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (
          await t.gqlOk(
            `mutation { deleteComment(input: { commentId: ${c.commentId}, hard: true }) { success } }`,
            {},
            mod.key,
          )
        ).deleteComment,
      ).toEqual({ success: true });
    });

    it('answers bad input with the contract codes and changes nothing', async () => {
      const c = (await post('kept', reader.key)).comment_id;
      const gone = await download('Hidden by soft delete');
      await post('under a download about to go', reader.key, gone);
      await t.rest('DELETE', `/api/mc-dm-downloads/${gone}/`, { key: author.key });
      const before = { comments: await t.prisma.comment.count(), log: await t.prisma.moderatorLog.count() };
      const codes = async (q: string, key = reader.key) => (await t.gql(q, {}, key)).codes;
      expect(await codes(`{ comments(downloadId: ${gone}) { nodes { message } } }`)).toEqual([
        'do_not_have_permission',
      ]);
      expect(await codes(`{ comments(downloadId: "one") { nodes { message } } }`)).toEqual(['invalid_input']);
      expect(await codes(`{ comments(downloadId: 99999) { nodes { message } } }`)).toEqual([
        'mc_dm_api_error.download_not_found',
      ]);
      expect(
        await codes(
          `mutation { createComment(input: { downloadId: ${gone}, message: "x" }) { comment { commentId } } }`,
        ),
      ).toEqual(['do_not_have_permission']);
      expect(
        await codes(
          `mutation { createComment(input: { downloadId: ${dl}, message: "  " }) { comment { commentId } } }`,
        ),
      ).toEqual(['required_input_missing']);
      expect(await codes(`mutation { createComment(input: { message: "x" }) { comment { commentId } } }`)).toEqual([
        'invalid_input',
      ]);
      const noScope = await t.key('USER', ['mc_dm_download:read', 'mc_dm_download:write'], mod.userId);
      const hard = await t.gql(
        `mutation { deleteComment(input: { commentId: ${c}, hard: true, reason: "no" }) { success } }`,
        {},
        noScope,
        { accept: 'application/graphql-response+json' },
      );
      expect(hard.status).toBe(200); // data { deleteComment: null } is data
      expect(hard.errors![0].extensions).toMatchObject({
        code: 'api_scope_missing',
        params: { scope: 'mc_dm_download:delete_hard' },
      });
      expect({ comments: await t.prisma.comment.count(), log: await t.prisma.moderatorLog.count() }).toEqual(before);
      expect(await t.prisma.comment.findUniqueOrThrow({ where: { id: c } })).toMatchObject({
        state: 'visible',
        message: 'kept',
      });
    });

    it("a download's hard delete removes its comments", async () => {
      const d = await download('Going for good');
      const c = (await post('goes with it', reader.key, d)).comment_id;
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${d}/`, { query: { hard: 1 } })).status).toBe(200);
      expect(await t.prisma.comment.count({ where: { id: c } })).toBe(0);
      expect((await t.gql(`{ comment(commentId: ${c}) { message } }`)).codes).toEqual([
        'mc_dm_api_error.comment_not_found',
      ]);
    });
  });
});
