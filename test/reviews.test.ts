// Reviews and ratings end to end, on both faces and both databases, with the counters checked against the rows.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

type Actor = { userId: number; key: string };

const REVIEW_FIELDS = [
  'review_id',
  'download_id',
  'user_id',
  'username',
  'rating',
  'message',
  'version_string',
  'review_date',
  'last_edit_date',
  'review_state',
  'owner_reply',
  'owner_reply_date',
];

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: Actor;
  let alice: Actor;
  let bob: Actor;
  let mod: Actor;
  let cat: number;
  let approvalCat: number;
  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    owner = await t.user('owner');
    alice = await t.user('alice');
    bob = await t.user('bob');
    mod = await t.user('mod', { isModerator: true });
    cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Open' } })).body.category.category_id;
    approvalCat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Approval' } })).body.category
      .category_id;
    await t.rest('PUT', `/api/mc-dm-categories/${approvalCat}/`, { form: { require_comment_approval: 1 } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const download = async (category = cat): Promise<number> => {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: category, title: 'Rated' },
    });
    return r.body.download.download_id;
  };
  const counters = async (id: number) => {
    const d = await t.prisma.download.findUniqueOrThrow({ where: { id } });
    return { avg: d.ratingAvg, count: d.ratingCount, reviews: d.reviewCount };
  };
  /** The counters as they must be: from the visible reviews in the database. */
  const expected = async (id: number) => {
    const rows = await t.prisma.review.findMany({ where: { downloadId: id, state: 'visible' } });
    const avg = rows.length ? rows.reduce((s, r) => s + r.rating, 0) / rows.length : 0;
    return { avg, count: rows.length, reviews: rows.filter((r) => r.message !== '').length };
  };
  const expectExact = async (id: number) => {
    const got = await counters(id);
    const want = await expected(id);
    expect(got.count).toBe(want.count);
    expect(got.reviews).toBe(want.reviews);
    expect(got.avg).toBeCloseTo(want.avg, 10);
    return got;
  };

  it('create over REST, a second replaces the first, counters follow in the same request', async () => {
    const d = await download();
    const r = await t.rest('POST', '/api/mc-dm-reviews/', {
      key: alice.key,
      form: { download_id: d, rating: 4, message: 'Nice', version_string: '1.0' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body.review)).toEqual(REVIEW_FIELDS);
    expect(r.body.review).toMatchObject({ rating: 4, message: 'Nice', version_string: '1.0', review_state: 'visible' });
    expect(await counters(d)).toEqual({ avg: 4, count: 1, reviews: 1 });
    await t.rest('POST', '/api/mc-dm-reviews/', { key: bob.key, form: { download_id: d, rating: 1 } });
    expect(await counters(d)).toEqual({ avg: 2.5, count: 2, reviews: 1 });
    // alice again: replaces her review (same id), no second row.
    const again = await t.rest('POST', '/api/mc-dm-reviews/', { key: alice.key, form: { download_id: d, rating: 2 } });
    expect(again.body.review.review_id).toBe(r.body.review.review_id);
    expect(again.body.review.message).toBe('');
    expect(await t.prisma.review.count({ where: { downloadId: d } })).toBe(2);
    expect(await counters(d)).toEqual({ avg: 1.5, count: 2, reviews: 0 });
    // The download's record shows them.
    const got = await t.rest('GET', `/api/mc-dm-downloads/${d}/`, { key: bob.key });
    expect(got.body.download).toMatchObject({ rating_avg: 1.5, rating_count: 2, review_count: 0 });
  });

  it('list, get, update, reply once, delete; GraphQL Download.reviews with totalCount', async () => {
    const d = await download();
    const a = (
      await t.rest('POST', '/api/mc-dm-reviews/', { key: alice.key, json: { download_id: d, rating: 5, message: 'A' } })
    ).body.review;
    const b = (await t.rest('POST', '/api/mc-dm-reviews/', { key: bob.key, json: { download_id: d, rating: 3 } })).body
      .review;
    const list = await t.rest('GET', '/api/mc-dm-reviews/', { key: owner.key, query: { download_id: d } });
    expect(list.status).toBe(200);
    expect(list.body.reviews.map((r: any) => r.review_id)).toEqual([b.review_id, a.review_id]);
    expect(list.body.pagination).toMatchObject({ total: 2, page: 1 });
    const one = await t.rest('GET', `/api/mc-dm-reviews/${a.review_id}/`, {
      key: owner.key,
      query: { with: 'full' },
    });
    expect(one.body.review).toMatchObject({ review_id: a.review_id, can_reply: true, can_edit: false });

    const upd = await t.rest('PUT', `/api/mc-dm-reviews/${a.review_id}/`, { key: alice.key, form: { rating: 1 } });
    expect(upd.body.review).toMatchObject({ rating: 1, message: 'A' });
    expect(upd.body.review.last_edit_date).toBeGreaterThan(0);
    await expectExact(d);
    expect(
      (await t.rest('PUT', `/api/mc-dm-reviews/${a.review_id}/`, { key: bob.key, form: { rating: 5 } })).status,
    ).toBe(403);

    const reply = await t.rest('POST', `/api/mc-dm-reviews/${a.review_id}/reply/`, {
      key: owner.key,
      form: { message: 'Thanks' },
    });
    expect(reply.body.review.owner_reply).toBe('Thanks');
    const second = await t.rest('POST', `/api/mc-dm-reviews/${a.review_id}/reply/`, {
      key: owner.key,
      form: { message: 'Again' },
    });
    expect(second.status).toBe(422);
    expect(second.body.errors[0].code).toBe('mc_dm_api_error.review_already_replied');
    expect((await t.prisma.review.findUniqueOrThrow({ where: { id: a.review_id } })).ownerReply).toBe('Thanks');
    const notOwner = await t.rest('POST', `/api/mc-dm-reviews/${b.review_id}/reply/`, {
      key: alice.key,
      form: { message: 'x' },
    });
    expect(notOwner.status).toBe(403);

    const q = `query($id: Int!) { download(downloadId: $id) { ratingCount reviews(first: 1) { totalCount nodes { reviewId rating username } pageInfo { hasNextPage endCursor } } } }`;
    const g = await t.gqlOk(q, { id: d }, owner.key);
    expect(g.download.reviews.totalCount).toBe(2);
    expect(g.download.reviews.nodes).toEqual([{ reviewId: b.review_id, rating: 3, username: 'bob' }]);
    expect(g.download.reviews.pageInfo.hasNextPage).toBe(true);
    const next = await t.gqlOk(
      `query($id: Int!, $after: String) { download(downloadId: $id) { reviews(first: 5, after: $after) { nodes { reviewId } } } }`,
      { id: d, after: g.download.reviews.pageInfo.endCursor },
      owner.key,
    );
    expect(next.download.reviews.nodes).toEqual([{ reviewId: a.review_id }]);

    const del = await t.rest('DELETE', `/api/mc-dm-reviews/${b.review_id}/`, {
      key: bob.key,
      query: { reason: 'meh' },
    });
    expect(del.body).toEqual({ success: true });
    expect(
      await t.prisma.moderatorLog.findFirst({ where: { contentType: 'review', contentId: b.review_id } }),
    ).toMatchObject({ action: 'review.soft_deleted', reason: 'meh', userId: bob.userId });
    expect(await expectExact(d)).toEqual({ avg: 1, count: 1, reviews: 1 });
    expect((await t.rest('GET', `/api/mc-dm-reviews/${b.review_id}/`, { key: owner.key })).status).toBe(403);
  });

  it('bad input and refusals answer a defined error and change nothing, on both faces', async () => {
    const d = await download();
    const before = await counters(d);
    const post = (key: string, form: Record<string, string | number>) =>
      t.rest('POST', '/api/mc-dm-reviews/', { key, form });
    const cases: [string, Record<string, string | number>, number, string, string?][] = [
      [alice.key, { download_id: d, rating: 0 }, 400, 'invalid_input', 'rating'],
      [alice.key, { download_id: d, rating: 6 }, 400, 'invalid_input', 'rating'],
      [alice.key, { download_id: d, rating: 'x' }, 400, 'invalid_input', 'rating'],
      [alice.key, { download_id: d }, 400, 'required_input_missing'],
      [alice.key, { download_id: d, rating: 3, message: 'x'.repeat(10_001) }, 400, 'invalid_input', 'message'],
      [alice.key, { download_id: 99999999, rating: 3 }, 404, 'mc_dm_api_error.download_not_found'],
      [owner.key, { download_id: d, rating: 5 }, 422, 'mc_dm_api_error.cannot_review_own_download'],
      [await t.key('GUEST'), { download_id: d, rating: 5 }, 403, 'do_not_have_permission'],
      [SUPER_KEY, { download_id: d, rating: 5 }, 403, 'do_not_have_permission'],
    ];
    for (const [key, form, status, code, field] of cases) {
      const r = await post(key, form);
      expect(r.status, JSON.stringify(form)).toBe(status);
      expect(r.body.errors[0].code).toBe(code);
      if (field) expect(r.body.errors[0].params.field).toBe(field);
    }
    const g = await t.gql(
      `mutation($i: CreateReviewInput!) { createReview(input: $i) { review { reviewId } } }`,
      { i: { downloadId: d, rating: 9 } },
      alice.key,
    );
    expect(g.codes).toEqual(['invalid_input']);
    expect(await t.prisma.review.count({ where: { downloadId: d } })).toBe(0);
    expect(await counters(d)).toEqual(before);
    // Without `review` in the group (the operator took it away), a registered user cannot review.
    await t.gqlOk(
      `mutation { setGroupPermission(input: { group: "registered", permission: "review", value: DENY }) { ok } }`,
    );
    try {
      expect((await post(alice.key, { download_id: d, rating: 3 })).body.errors[0].code).toBe('do_not_have_permission');
    } finally {
      await t.gqlOk(
        `mutation { setGroupPermission(input: { group: "registered", permission: "review", value: ALLOW }) { ok } }`,
      );
    }
    expect((await t.rest('GET', '/api/mc-dm-reviews/', { key: alice.key })).body.errors[0].code).toBe(
      'required_input_missing',
    );
    expect((await t.rest('GET', '/api/mc-dm-reviews/424242/', { key: alice.key })).status).toBe(404);
    // malformed values: 400 invalid_input naming the field, on REST
    const malformed: [string, string, Record<string, string | number>, string][] = [
      ['POST', '/api/mc-dm-reviews/', { download_id: 'abc', rating: 3 }, 'download_id'],
      ['POST', '/api/mc-dm-reviews/', { download_id: d, rating: 3.5 }, 'rating'],
      ['GET', '/api/mc-dm-reviews/', { download_id: d, per_page: 0 }, 'per_page'],
      ['GET', '/api/mc-dm-reviews/', { download_id: d, page: -1 }, 'page'],
      ['GET', '/api/mc-dm-reviews/0/', {}, 'review_id'],
      ['PUT', '/api/mc-dm-reviews/abc/', { rating: 3 }, 'review_id'],
    ];
    for (const [method, path, form, field] of malformed) {
      const r =
        method === 'GET'
          ? await t.rest(method, path, { key: alice.key, query: form })
          : await t.rest(method, path, { key: alice.key, form });
      expect(r.status, `${method} ${path} ${JSON.stringify(form)}`).toBe(400);
      expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field } });
    }
    expect(await t.prisma.review.count({ where: { downloadId: d } })).toBe(0);
  });

  it('moderated like comments: a moderated review counts only once approved', async () => {
    const d = await download(approvalCat);
    const r = await t.rest('POST', '/api/mc-dm-reviews/', { key: alice.key, form: { download_id: d, rating: 2 } });
    expect(r.body.review.review_state).toBe('moderated');
    expect(await counters(d)).toEqual({ avg: 0, count: 0, reviews: 0 });
    const byMod = await t.rest('POST', '/api/mc-dm-reviews/', { key: mod.key, form: { download_id: d, rating: 4 } });
    expect(byMod.body.review.review_state).toBe('visible');
    expect(await expectExact(d)).toEqual({ avg: 4, count: 1, reviews: 0 });
    const id = r.body.review.review_id;
    expect((await t.rest('GET', `/api/mc-dm-reviews/${id}/`, { key: bob.key })).status).toBe(403);
    // Only moderators approve; then it counts.
    expect((await t.rest('POST', `/api/mc-dm-reviews/${id}/approve/`, { key: owner.key })).status).toBe(403);
    const ok = await t.rest('POST', `/api/mc-dm-reviews/${id}/approve/`, { key: mod.key });
    expect(ok.body.review.review_state).toBe('visible');
    expect(await expectExact(d)).toEqual({ avg: 3, count: 2, reviews: 0 });
    const again = await t.rest('POST', `/api/mc-dm-reviews/${id}/approve/`, { key: mod.key });
    expect(again.status).toBe(422);
    expect(again.body.errors[0].code).toBe('mc_dm_api_error.review_not_moderated');
    // bob's moderated review, rejected with a reason: never counted, in the moderator log.
    const b = await t.rest('POST', '/api/mc-dm-reviews/', { key: bob.key, form: { download_id: d, rating: 1 } });
    const reject = `mutation($i: RejectReviewInput!) { rejectReview(input: $i) { review { reviewState } } }`;
    expect((await t.gql(reject, { i: { reviewId: b.body.review.review_id, reason: ' ' } }, mod.key)).codes).toEqual([
      'required_input_missing',
    ]);
    const rej = await t.gqlOk(reject, { i: { reviewId: b.body.review.review_id, reason: 'Rude' } }, mod.key);
    expect(rej.rejectReview.review.reviewState).toBe('DELETED');
    expect(
      await t.prisma.moderatorLog.findFirst({ where: { contentType: 'review', contentId: b.body.review.review_id } }),
    ).toMatchObject({ action: 'review.rejected', reason: 'Rude' });
    expect(await expectExact(d)).toEqual({ avg: 3, count: 2, reviews: 0 });
  });

  if (kind === 'postgres') {
    it('200 reviews from 200 users at once on one download: counters exact', async () => {
      const d = await download();
      const registered = await t.prisma.group.findUniqueOrThrow({ where: { name: 'registered' } });
      const users = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          t.prisma.user.create({
            data: { username: `rater${i}`, primaryGroupId: registered.id },
            select: { id: true },
          }),
        ),
      );
      const results = await Promise.all(
        users.map((u, i) =>
          t.gql(
            `mutation($i: CreateReviewInput!) { createReview(input: $i) { review { reviewId rating } } }`,
            { i: { downloadId: d, rating: (i % 5) + 1, message: i % 3 === 0 ? 'm' : '' } },
            SUPER_KEY,
            { 'Forum-Api-User': String(u.id) },
          ),
        ),
      );
      expect(results.filter((r) => r.errors?.length).map((r) => r.codes)).toEqual([]);
      const stored = await t.prisma.review.findMany({ where: { downloadId: d } });
      expect(stored).toHaveLength(200);
      const got = await expectExact(d);
      expect(got.count).toBe(200);
      expect(got.avg).toBeCloseTo(stored.reduce((s, r) => s + r.rating, 0) / 200, 10);
    }, 120_000);
  }
});
