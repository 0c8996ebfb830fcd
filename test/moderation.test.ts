// Moderation both ways: approve and reject moderated downloads and comments, on both faces and both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

type Actor = { userId: number; key: string };

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: Actor;
  let other: Actor;
  let mod: Actor;
  let cat: number;
  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    owner = await t.user('owner');
    other = await t.user('other');
    mod = await t.user('mod', { isModerator: true });
    const r = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Queue' } });
    cat = r.body.category.category_id;
    await t.rest('PUT', `/api/mc-dm-categories/${cat}/`, {
      form: { require_approval: 1, require_comment_approval: 1 },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const moderatedDownload = async (): Promise<number> => {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: cat, title: 'M' } });
    expect(r.body.download.download_state).toBe('moderated');
    return r.body.download.download_id;
  };
  const moderatedComment = async (downloadId: number): Promise<number> => {
    const r = await t.rest('POST', '/api/mc-dm-comments/', {
      key: other.key,
      form: { download_id: downloadId, message: 'hello' },
    });
    expect(r.body.comment.comment_state).toBe('moderated');
    return r.body.comment.comment_id;
  };
  const visibleDownload = async (): Promise<number> => {
    const id = await moderatedDownload();
    await t.rest('POST', `/api/mc-dm-downloads/${id}/approve/`, { key: mod.key });
    return id;
  };
  const dl = (id: number) => t.prisma.download.findUniqueOrThrow({ where: { id } });
  const cm = (id: number) => t.prisma.comment.findUniqueOrThrow({ where: { id } });

  describe('downloads', () => {
    it('approve over REST: moderated → visible, audited, counted in its category', async () => {
      const id = await moderatedDownload();
      const before = (await t.prisma.category.findUniqueOrThrow({ where: { id: cat } })).downloadCount;
      const r = await t.rest('POST', `/api/mc-dm-downloads/${id}/approve/`, { key: mod.key });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.download).toMatchObject({ download_id: id, download_state: 'visible' });
      expect((await dl(id)).state).toBe('visible');
      expect(
        await t.prisma.auditLog.findFirst({ where: { contentId: id, action: 'download.approved' } }),
      ).toMatchObject({ contentType: 'download', userId: mod.userId });
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: cat } })).downloadCount).toBe(before + 1);
      // A second approve: 422 with a named code, nothing changed.
      const again = await t.rest('POST', `/api/mc-dm-downloads/${id}/approve/`, { key: mod.key });
      expect(again.status).toBe(422);
      expect(again.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.download_not_moderated',
        params: { download_id: id },
      });
      expect(await t.prisma.auditLog.count({ where: { contentId: id, action: 'download.approved' } })).toBe(1);
    });

    it('reject over GraphQL: moderated → deleted with the reason in the audit log; restore brings it back moderated', async () => {
      const id = await moderatedDownload();
      const reject = `mutation($i: RejectDownloadInput!) { rejectDownload(input: $i) { download { downloadId downloadState } } }`;
      const d = await t.gqlOk(reject, { i: { downloadId: id, reason: '  Spam  ' } }, mod.key);
      expect(d.rejectDownload.download).toEqual({ downloadId: id, downloadState: 'DELETED' });
      const row = await dl(id);
      expect(row).toMatchObject({ state: 'deleted', stateBeforeDelete: 'moderated' });
      expect(row.deletedAt).not.toBeNull();
      expect(
        await t.prisma.auditLog.findFirst({ where: { contentId: id, action: 'download.rejected' } }),
      ).toMatchObject({ reason: 'Spam', userId: mod.userId });
      expect((await t.gql(reject, { i: { downloadId: id, reason: 'x' } }, mod.key)).codes).toEqual([
        'mc_dm_api_error.download_not_moderated',
      ]);
      const restore = `mutation($i: RestoreDownloadInput!) { restoreDownload(input: $i) { download { downloadState } } }`;
      expect((await t.gqlOk(restore, { i: { downloadId: id } }, mod.key)).restoreDownload.download.downloadState).toBe(
        'MODERATED',
      );
    });

    it('bad input and refusals change nothing, on both faces', async () => {
      const id = await moderatedDownload();
      const cases: [string, Record<string, unknown>, string, number][] = [
        [`/api/mc-dm-downloads/${id}/reject/`, {}, 'required_input_missing', 400],
        [`/api/mc-dm-downloads/${id}/reject/`, { reason: '   ' }, 'required_input_missing', 400],
        [`/api/mc-dm-downloads/${id}/reject/`, { reason: 'x'.repeat(1001) }, 'invalid_input', 400],
        ['/api/mc-dm-downloads/99999999/approve/', {}, 'mc_dm_api_error.download_not_found', 404],
        ['/api/mc-dm-downloads/0/approve/', {}, 'invalid_input', 400],
        ['/api/mc-dm-downloads/abc/approve/', {}, 'invalid_input', 400],
      ];
      for (const [path, form, code, status] of cases) {
        const r = await t.rest('POST', path, { key: mod.key, form: form as Record<string, string> });
        expect(r.status, `${path} ${JSON.stringify(form)}`).toBe(status);
        expect(r.body.errors[0].code).toBe(code);
      }
      // The owner may see and edit it, but holds no viewModerated: 403. So does another user, who cannot even see it.
      for (const key of [owner.key, other.key]) {
        const r = await t.rest('POST', `/api/mc-dm-downloads/${id}/approve/`, { key });
        expect(r.status).toBe(403);
        expect(r.body.errors[0].code).toBe('do_not_have_permission');
      }
      const g = await t.gql(
        `mutation($i: ApproveDownloadInput!) { approveDownload(input: $i) { download { downloadId } } }`,
        { i: { downloadId: id } },
        owner.key,
      );
      expect(g.codes).toEqual(['do_not_have_permission']);
      expect((await dl(id)).state).toBe('moderated');
      expect(await t.prisma.auditLog.count({ where: { contentId: id } })).toBe(0);
      // A visible download is not moderated.
      const v = await visibleDownload();
      const r = await t.rest('POST', `/api/mc-dm-downloads/${v}/reject/`, { key: mod.key, form: { reason: 'no' } });
      expect(r.status).toBe(422);
      expect(r.body.errors[0].code).toBe('mc_dm_api_error.download_not_moderated');
      expect((await dl(v)).state).toBe('visible');
    });

    it('an approve and a reject at the same moment: exactly one wins', async () => {
      const id = await moderatedDownload();
      const [a, b] = await Promise.all([
        t.rest('POST', `/api/mc-dm-downloads/${id}/approve/`, { key: mod.key }),
        t.rest('POST', `/api/mc-dm-downloads/${id}/reject/`, { key: mod.key, form: { reason: 'race' } }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 422]);
      const state = (await dl(id)).state;
      expect(state).toBe(a.status === 200 ? 'visible' : 'deleted');
      expect(await t.prisma.auditLog.count({ where: { contentId: id, contentType: 'download' } })).toBe(1);
    });
  });

  describe('comments', () => {
    it('approve and reject over REST, with the moderator log', async () => {
      const d = await visibleDownload();
      const c1 = await moderatedComment(d);
      const c2 = await moderatedComment(d);
      const a = await t.rest('POST', `/api/mc-dm-comments/${c1}/approve/`, { key: mod.key });
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(a.body.comment).toMatchObject({ comment_id: c1, comment_state: 'visible' });
      const r = await t.rest('POST', `/api/mc-dm-comments/${c2}/reject/`, {
        key: mod.key,
        json: { reason: 'Off topic' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.comment).toMatchObject({ comment_id: c2, comment_state: 'deleted' });
      expect(await cm(c2)).toMatchObject({ state: 'deleted', stateBeforeDelete: 'moderated' });
      expect(
        await t.prisma.moderatorLog.findMany({
          where: { contentId: { in: [c1, c2] }, contentType: 'comment' },
          orderBy: { id: 'asc' },
          select: { action: true, reason: true, userId: true },
        }),
      ).toEqual([
        { action: 'comment.approved', reason: '', userId: mod.userId },
        { action: 'comment.rejected', reason: 'Off topic', userId: mod.userId },
      ]);
      // Listed to everyone now.
      const list = await t.rest('GET', '/api/mc-dm-comments/', { key: owner.key, query: { download_id: d } });
      expect(list.body.comments.map((c: any) => c.comment_id)).toEqual([c1]);
    });

    it('refusals and bad input change nothing, on both faces', async () => {
      const d = await visibleDownload();
      const c = await moderatedComment(d);
      const approve = `mutation($i: ApproveCommentInput!) { approveComment(input: $i) { comment { commentId } } }`;
      const reject = `mutation($i: RejectCommentInput!) { rejectComment(input: $i) { comment { commentId } } }`;
      // The author may see it but holds no viewModerated; the download's owner cannot see it.
      expect((await t.gql(approve, { i: { commentId: c } }, other.key)).codes).toEqual(['do_not_have_permission']);
      expect((await t.gql(approve, { i: { commentId: c } }, owner.key)).codes).toEqual(['do_not_have_permission']);
      expect((await t.gql(reject, { i: { commentId: c, reason: '' } }, mod.key)).codes).toEqual([
        'required_input_missing',
      ]);
      expect((await t.gql(approve, { i: { commentId: 99999999 } }, mod.key)).codes).toEqual([
        'mc_dm_api_error.comment_not_found',
      ]);
      const rest = await t.rest('POST', `/api/mc-dm-comments/${c}/reject/`, { key: other.key, form: { reason: 'x' } });
      expect(rest.status).toBe(403);
      expect((await cm(c)).state).toBe('moderated');
      expect(await t.prisma.moderatorLog.count({ where: { contentId: c, contentType: 'comment' } })).toBe(0);
      // Approved once: the second answers the named code.
      expect((await t.gqlOk(approve, { i: { commentId: c } }, mod.key)).approveComment.comment.commentId).toBe(c);
      const again = await t.rest('POST', `/api/mc-dm-comments/${c}/approve/`, { key: mod.key });
      expect(again.status).toBe(422);
      expect(again.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.comment_not_moderated',
        params: { comment_id: c },
      });
    });
  });
});
