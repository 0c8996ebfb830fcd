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
  'GET /api/mc-dm-files/': { plain: 1, full: 1 },
  'GET /api/mc-dm-files/:file_id/': { plain: 1, full: 1 },
  // Webhooks are an integration's settings, read by Prisma: the page and its count are two statements (read rarely,
  // by their owner; not worth a hand-written read); one webhook is one.
  'GET /api/mc-dm-webhooks/': { plain: 2, full: 2 },
  'GET /api/mc-dm-webhooks/:webhook_id/': { plain: 1, full: 1 },
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
});
