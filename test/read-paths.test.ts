// One read path per resource: every documented REST read (and its GraphQL twin) is answered by the hand-written SQL
// reads, one statement for a row or a page with its total, whatever `with=full` adds. A read that falls back to
// Prisma (a field added to a fragment that the SQL path does not cover, a relation Prisma loads on its own) sends
// more statements and fails here, as does a new GET route without a row in the table below.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../rest-adapter/routes.js';
import { startTestApp, type TestApp } from './helpers/app.js';

/** Statements each GET route sends once the key and permission tables are cached, plain and with `with=full`. */
const EXPECTED: Record<string, { plain: number; full: number }> = {
  'GET /api/mc-dm-categories/': { plain: 1, full: 1 },
  'GET /api/mc-dm-categories/:category_id/': { plain: 1, full: 1 },
  'GET /api/mc-dm-downloads/': { plain: 1, full: 1 },
  'GET /api/mc-dm-downloads/:download_id/': { plain: 1, full: 1 },
  'GET /api/mc-dm-comments/': { plain: 1, full: 1 },
  'GET /api/mc-dm-comments/:comment_id/': { plain: 1, full: 1 },
  // Versions are read by Prisma, not by a hand-written statement yet: the download (its view check), then the count
  // and the page (the list); the version with its download and category (get), plus its files with with=full.
  'GET /api/mc-dm-versions/': { plain: 3, full: 3 },
  'GET /api/mc-dm-versions/:version_id/': { plain: 1, full: 2 },
  // The root version; then two a level (candidate versions, their downloads), none here (no dependencies).
  'GET /api/mc-dm-versions/:version_id/dependencies/': { plain: 1, full: 1 },
  'GET /api/mc-dm-files/': { plain: 1, full: 1 },
  'GET /api/mc-dm-files/:file_id/': { plain: 1, full: 1 },
  // Reviews are read through Prisma (one statement with joins for a review, its download and its author). The list
  // sends three, not yet one hand-written statement (a module's store.ts): its download (404/403 before anything is
  // listed), its total and its page, the last two side by side.
  'GET /api/mc-dm-reviews/': { plain: 3, full: 3 },
  'GET /api/mc-dm-reviews/:review_id/': { plain: 1, full: 1 },
  // Statistics: the download (404/403), then its days (one statement with generate_series); a team member, not an
  // editor by editAny, would add the team lookup.
  'GET /api/mc-dm-downloads/:download_id/stats/': { plain: 2, full: 2 },
  // A page of the log and its total with the filter, side by side (through Prisma).
  'GET /api/mc-dm-audit-log/': { plain: 2, full: 2 },
  // Webhooks are an integration's settings, read by Prisma: the page and its count are two statements (read rarely,
  // by their owner; not worth a hand-written read); one webhook is one.
  'GET /api/mc-dm-webhooks/': { plain: 2, full: 2 },
  'GET /api/mc-dm-webhooks/:webhook_id/': { plain: 1, full: 1 },
};

/**
 * The same list answering a search (`q`): the page, its total and its facets in one statement when the exact matches
 * fill the page; when they are fewer, a second statement with the typo fallback (on a PostgreSQL server, one small
 * statement first asks the lexicon about the query's words, and a query with a word no document holds runs only the
 * second; this file runs on the embedded database, where that statement is not sent). One download matches "wrench".
 */
const SEARCHES: Record<string, { query: Record<string, string | number>; statements: number }> = {
  'GET /api/mc-dm-downloads/?q=&per_page=1': { query: { q: 'wrench', per_page: 1 }, statements: 1 },
  'GET /api/mc-dm-downloads/?q=&facets=1&per_page=1': { query: { q: 'wrench', facets: 1, per_page: 1 }, statements: 1 },
  'GET /api/mc-dm-downloads/?q=': { query: { q: 'wrench' }, statements: 2 },
  'GET /api/mc-dm-downloads/?q=&facets=1': { query: { q: 'wrench', facets: 1 }, statements: 2 },
};

describe('read paths', () => {
  let t: TestApp;
  const ids: Record<string, number> = {};
  beforeAll(async () => {
    // The read cache would answer repeated reads without a statement; this test is about the reads themselves.
    t = await startTestApp('pglite', { readCacheMb: 0 });
    const category = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Tools' } });
    ids.category_id = category.body.category.category_id;
    const owner = await t.user('owner', { isAdmin: true });
    const download = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: ids.category_id, title: 'Wrench', description: 'Turns bolts.', version_string: '1.0' },
    });
    ids.download_id = download.body.download.download_id;
    const versionId = download.body.download.current_version_id;
    const file = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: versionId, external_url: 'https://example.com/wrench.zip', link_only: 1 },
    });
    expect(file.status, JSON.stringify(file.body)).toBe(200);
    ids.file_id = file.body.file.file_id;
    const comment = await t.rest('POST', '/api/mc-dm-comments/', {
      key: owner.key,
      form: { download_id: ids.download_id, message: 'Works.' },
    });
    ids.comment_id = comment.body.comment.comment_id;
    ids.version_id = versionId;
    const reviewer = await t.user('reviewer');
    const review = await t.rest('POST', '/api/mc-dm-reviews/', {
      key: reviewer.key,
      form: { download_id: ids.download_id, rating: 5, message: 'Fits.' },
    });
    ids.review_id = review.body.review.review_id;
    const hook = await t.rest('POST', '/api/mc-dm-webhooks/', {
      form: { url: 'https://93.184.215.14/hook', events: ['*'] },
    });
    ids.webhook_id = hook.body.webhook.webhook_id;
  });
  afterAll(() => t?.close());

  it('every GET route has a row', () => {
    const gets = routes.filter((r) => r.method === 'GET').map((r) => `${r.method} ${r.path}`);
    expect(gets.filter((k) => !(k in EXPECTED))).toEqual([]);
  });

  for (const [key, counts] of Object.entries(EXPECTED)) {
    it(`${key} sends ${counts.plain} statement(s), ${counts.full} with with=full`, async () => {
      const path = key.slice(4).replace(/:(\w+)/g, (_, name) => String(ids[name]));
      const query: Record<string, string | number> = {};
      if (key === 'GET /api/mc-dm-comments/') query.download_id = ids.download_id!;
      if (key === 'GET /api/mc-dm-files/') query.version_id = ids.version_id!;
      if (key === 'GET /api/mc-dm-versions/') query.download_id = ids.download_id!;
      if (key === 'GET /api/mc-dm-reviews/') query.download_id = ids.download_id!;
      for (const [mode, expected] of [
        ['plain', counts.plain],
        ['full', counts.full],
      ] as const) {
        const q = mode === 'full' ? { ...query, with: 'full' } : query;
        await t.rest('GET', path, { query: q }); // warms the key, permission and prepared statements
        // The fewest of three runs: a statement of the service's own (a key's last use stamped) may fall beside one.
        let fewest = Number.POSITIVE_INFINITY;
        for (let i = 0; i < 3; i++) {
          const before = t.app.db.statements();
          const res = await t.rest('GET', path, { query: q });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          fewest = Math.min(fewest, t.app.db.statements() - before);
        }
        expect(fewest, `${key} ${mode}`).toBe(expected);
      }
    });
  }

  for (const [key, { query, statements }] of Object.entries(SEARCHES)) {
    it(`${key} sends ${statements} statement(s), also with with=full`, async () => {
      for (const q of [query, { ...query, with: 'full' }]) {
        await t.rest('GET', '/api/mc-dm-downloads/', { query: q });
        let fewest = Number.POSITIVE_INFINITY;
        for (let i = 0; i < 3; i++) {
          const before = t.app.db.statements();
          const res = await t.rest('GET', '/api/mc-dm-downloads/', { query: q });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.downloads.map((d: { title: string }) => d.title)).toEqual(['Wrench']);
          fewest = Math.min(fewest, t.app.db.statements() - before);
        }
        expect(fewest, `${key} ${JSON.stringify(q)}`).toBe(statements);
      }
    });
  }
});
