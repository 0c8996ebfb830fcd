// Moderation both ways: approve and reject moderated downloads and comments, on both faces and both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY as SUPER, type TestApp } from './helpers/app.js';

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

  describe('reports and the queue', () => {
    const REPORT = `mutation($i: ReportContentInput!) { reportContent(input: $i) { report { reportId reportState reason } } }`;
    const QUEUE = `query($first: Int, $after: String) { moderationQueue(first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor }
      nodes { __typename ... on Download { downloadId } ... on Comment { commentId } ... on File { fileId } ... on Report { reportId contentType contentId reason } ... on Review { reviewId } } } }`;
    const RESOLVE = `mutation($i: ResolveReportInput!) { resolveReport(input: $i) { report { reportState resolvedBy resolution } } }`;

    it('a registered visitor reports; moderators page the queue and resolve; others are refused', async () => {
      const d = await visibleDownload();
      const r = await t.gqlOk(
        REPORT,
        { i: { contentType: 'DOWNLOAD', contentId: d, reason: ' Broken link ' } },
        other.key,
      );
      expect(r.reportContent.report).toMatchObject({ reportState: 'OPEN', reason: 'Broken link' });
      const reportId = r.reportContent.report.reportId;
      // Reported again by the same visitor: the same report, its reason replaced.
      const again = await t.gqlOk(
        REPORT,
        { i: { contentType: 'DOWNLOAD', contentId: d, reason: 'Still broken' } },
        other.key,
      );
      expect(again.reportContent.report.reportId).toBe(reportId);
      expect(await t.prisma.report.count({ where: { contentType: 'download', contentId: d } })).toBe(1);

      const pending = await moderatedDownload();
      const review = await t.rest('POST', '/api/mc-dm-reviews/', {
        key: other.key,
        form: { download_id: d, rating: 2 },
      });
      expect(review.body.review.review_state).toBe('moderated');
      // The whole queue, two at a time: everything the database holds, each once, oldest first.
      const seen: string[] = [];
      let after: string | null = null;
      let total = -1;
      for (let i = 0; i < 100; i++) {
        const q: any = (await t.gqlOk(QUEUE, { first: 2, after }, mod.key)).moderationQueue;
        total = q.totalCount;
        for (const n of q.nodes)
          seen.push(`${n.__typename}:${n.downloadId ?? n.commentId ?? n.fileId ?? n.reportId ?? n.reviewId}`);
        if (!q.pageInfo.hasNextPage) break;
        after = q.pageInfo.endCursor;
      }
      const expected =
        (await t.prisma.download.count({ where: { state: 'moderated' } })) +
        (await t.prisma.comment.count({ where: { state: 'moderated' } })) +
        (await t.prisma.file.count({ where: { validationStatus: 'failed', isDeleted: false } })) +
        (await t.prisma.report.count({ where: { state: 'open' } })) +
        (await t.prisma.review.count({ where: { state: 'moderated' } }));
      expect(total).toBe(expected);
      expect(seen).toHaveLength(expected);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toContain(`Report:${reportId}`);
      expect(seen).toContain(`Download:${pending}`);
      expect(seen).toContain(`Review:${review.body.review.review_id}`);
      expect(seen.indexOf(`Report:${reportId}`)).toBeLessThan(seen.indexOf(`Download:${pending}`));

      // Not for registered users or guests.
      expect((await t.gql(QUEUE, {}, owner.key)).codes).toEqual(['do_not_have_permission']);
      expect((await t.gql(RESOLVE, { i: { reportId } }, owner.key)).codes).toEqual(['do_not_have_permission']);
      const res = await t.gqlOk(RESOLVE, { i: { reportId, resolution: 'Fixed' } }, mod.key);
      expect(res.resolveReport.report).toEqual({
        reportState: 'RESOLVED',
        resolvedBy: mod.userId,
        resolution: 'Fixed',
      });
      expect((await t.gql(RESOLVE, { i: { reportId } }, mod.key)).codes).toEqual([
        'mc_dm_api_error.report_already_resolved',
      ]);
      expect((await t.gql(RESOLVE, { i: { reportId: 999999 } }, mod.key)).codes).toEqual([
        'mc_dm_api_error.report_not_found',
      ]);
      expect(await t.prisma.moderatorLog.count({ where: { contentType: 'report', contentId: reportId } })).toBe(1);
      // Once resolved, a new report opens a new one.
      const fresh = await t.gqlOk(REPORT, { i: { contentType: 'DOWNLOAD', contentId: d, reason: 'Again' } }, other.key);
      expect(fresh.reportContent.report.reportId).not.toBe(reportId);
    });

    it('bad reports answer a defined error and store nothing', async () => {
      const d = await visibleDownload();
      const c = await moderatedComment(d);
      const before = await t.prisma.report.count();
      const cases: [Record<string, unknown>, string, string][] = [
        [{ contentType: 'DOWNLOAD', contentId: d, reason: '' }, other.key, 'required_input_missing'],
        [{ contentType: 'DOWNLOAD', contentId: d, reason: '   ' }, other.key, 'required_input_missing'],
        [{ contentType: 'DOWNLOAD', contentId: d, reason: 'x'.repeat(1001) }, other.key, 'invalid_input'],
        [
          { contentType: 'DOWNLOAD', contentId: 99999999, reason: 'x' },
          other.key,
          'mc_dm_api_error.download_not_found',
        ],
        [{ contentType: 'COMMENT', contentId: 99999999, reason: 'x' }, other.key, 'mc_dm_api_error.comment_not_found'],
        [{ contentType: 'FILE', contentId: 99999999, reason: 'x' }, other.key, 'mc_dm_api_error.file_not_found'],
        [{ contentType: 'REVIEW', contentId: 99999999, reason: 'x' }, other.key, 'mc_dm_api_error.review_not_found'],
        // a moderated comment by `other`: its download's owner cannot see it
        [{ contentType: 'COMMENT', contentId: c, reason: 'x' }, owner.key, 'do_not_have_permission'],
        [{ contentType: 'DOWNLOAD', contentId: d, reason: 'x' }, await t.key('GUEST'), 'do_not_have_permission'],
        [{ contentType: 'PAGE', contentId: d, reason: 'x' }, other.key, 'invalid_input'],
      ];
      for (const [i, key, code] of cases)
        expect((await t.gql(REPORT, { i }, key)).codes, JSON.stringify(i)).toEqual([code]);
      expect(await t.prisma.report.count()).toBe(before);
    });
  });

  describe('the audit log', () => {
    const LOG = `query($f: AuditLogFilter, $first: Int, $after: String) { auditLog(filter: $f, first: $first, after: $after) {
      totalCount pageInfo { hasNextPage endCursor } nodes { entryId action contentType contentId userId reason date } } }`;

    it('admins and super-user keys read it, filtered and paged, on both faces; moderators and users are refused', async () => {
      const admin = await t.user('auditor', { isAdmin: true });
      const id = await moderatedDownload();
      await t.rest('POST', `/api/mc-dm-downloads/${id}/reject/`, { key: mod.key, form: { reason: 'Audited' } });
      const one = await t.gqlOk(LOG, { f: { contentType: 'download', contentId: id } }, admin.key);
      expect(one.auditLog.totalCount).toBe(1);
      expect(one.auditLog.nodes[0]).toMatchObject({
        action: 'download.rejected',
        contentId: id,
        userId: mod.userId,
        reason: 'Audited',
      });
      // by action, all pages: newest first, each once, as many as the table holds
      const all = await t.prisma.auditLog.findMany({
        where: { action: 'download.approved' },
        orderBy: [{ date: 'desc' }, { id: 'desc' }],
      });
      const seen: number[] = [];
      let after: string | null = null;
      for (let i = 0; i < 50; i++) {
        const p: any = (await t.gqlOk(LOG, { f: { action: 'download.approved' }, first: 2, after }, SUPER)).auditLog;
        expect(p.totalCount).toBe(all.length);
        seen.push(...p.nodes.map((n: any) => n.entryId));
        if (!p.pageInfo.hasNextPage) break;
        after = p.pageInfo.endCursor;
      }
      expect(seen).toEqual(all.map((e) => e.id));
      // a date window that ends before anything was written
      const none = await t.gqlOk(LOG, { f: { to: '2000-01-01T00:00:00Z' } }, admin.key);
      expect(none.auditLog).toMatchObject({ totalCount: 0, nodes: [] });
      // the moderator log
      const modLog = await t.gqlOk(LOG, { f: { log: 'MODERATOR', action: 'comment.rejected' } }, admin.key);
      expect(modLog.auditLog.nodes.every((n: any) => n.contentType === 'comment')).toBe(true);
      // REST
      const r = await t.rest('GET', '/api/mc-dm-audit-log/', {
        key: admin.key,
        query: { content_type: 'download', content_id: id },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.audit_log.total_count).toBe(1);
      expect(r.body.audit_log.nodes[0]).toMatchObject({
        action: 'download.rejected',
        content_id: id,
        reason: 'Audited',
      });
      // refusals and bad input
      for (const key of [mod.key, owner.key]) {
        expect((await t.gql(LOG, {}, key)).codes).toEqual(['do_not_have_permission']);
        expect((await t.rest('GET', '/api/mc-dm-audit-log/', { key })).status).toBe(403);
      }
      expect((await t.gql(LOG, { f: { action: 'x'.repeat(101) } }, admin.key)).codes).toEqual(['invalid_input']);
      const bad = await t.rest('GET', '/api/mc-dm-audit-log/', { key: admin.key, query: { from: 'yesterday' } });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'from' } });
      const badCursor = await t.rest('GET', '/api/mc-dm-audit-log/', { key: admin.key, query: { after: 'nope' } });
      expect(badCursor.status).toBe(400);
    });
  });
});
