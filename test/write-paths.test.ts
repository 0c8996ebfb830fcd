// The frequent writes stay off Prisma's model queries: a download edited (its tag line; its tags and its category) and a
// comment posted, through REST and GraphQL, send only hand-written statements (one driver transaction for the write).
// Prisma's model queries cost about a millisecond of CPU each (their plan compiled in WebAssembly per call), several
// times the statements' own time; a write that falls back to one (a Prisma read or write added to the path) sends a
// statement naming "public"."<table>", as Prisma's generated SQL does, and fails here. The embedded database reports
// every statement, its own jobs' included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

describe('write paths', () => {
  let t: TestApp;
  let owner: { key: string; userId: number };
  let downloadId = 0;
  let otherCategory = 0;
  let firstCategory = 0;
  const seen: string[] = [];
  beforeAll(async () => {
    t = await startTestApp('pglite', { readCacheMb: 0, commentFloodSeconds: 0 });
    t.app.db.onStatement((sql) => seen.push(sql ?? '<no text>'));
    firstCategory = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Tools' } })).body.category
      .category_id;
    otherCategory = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Parts' } })).body.category
      .category_id;
    owner = await t.user('owner', { isAdmin: true });
    const d = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: firstCategory, title: 'Wrench', tags: ['steel'] },
    });
    downloadId = d.body.download.download_id;
  });
  afterAll(() => t?.close());

  /** The statements `write` sends, fewest Prisma-generated ones of three runs (a key's use stamp may fall beside). */
  async function prismaStatementsOf(write: (i: number) => Promise<void>): Promise<string[]> {
    await write(0); // warms the key, permissions and prepared statements
    let fewest: string[] | null = null;
    for (let i = 1; i <= 3; i++) {
      seen.length = 0;
      await write(i);
      const prismas = seen.filter((sql) => sql.includes('"public".') || sql === '<no text>');
      if (fewest === null || prismas.length < fewest.length) fewest = prismas;
    }
    return fewest!;
  }

  it('REST: editing a tag line sends no Prisma query, and the edit is there', async () => {
    const sent = await prismaStatementsOf(async (i) => {
      const res = await t.rest('PUT', `/api/mc-dm-downloads/${downloadId}/`, {
        key: owner.key,
        form: { tag_line: `Turns bolts ${i}` },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.download.tag_line).toBe(`Turns bolts ${i}`);
    });
    expect(sent).toEqual([]);
    const read = await t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`);
    expect(read.body.download.tag_line).toBe('Turns bolts 3');
    // lastUpdate moved to now (the column holds UTC: a zone mistake would put it hours away).
    expect(Math.abs(read.body.download.last_update * 1000 - Date.now())).toBeLessThan(60_000);
  });

  it('GraphQL: replacing tags and moving the download sends no Prisma query but the target category lookup', async () => {
    const sent = await prismaStatementsOf(async (i) => {
      const res = await t.gqlOk(
        `mutation($input: UpdateDownloadInput!) { updateDownload(input: $input) { download { categoryId tags } } }`,
        {
          input: {
            downloadId,
            categoryId: i % 2 ? otherCategory : firstCategory,
            tags: [`steel`, `size ${i}`],
          },
        },
        owner.key,
      );
      expect(res.updateDownload.download.tags).toEqual([`size ${i}`, 'steel']);
    });
    // The move reads its target category (with the permission check), through Prisma: a rare write.
    expect(sent.length, sent.join('\n')).toBeLessThanOrEqual(1);
    expect(sent.join('\n')).not.toMatch(/"public"\."(download|download_tag|tag|event_outbox)"/);
    const counts = await t.rest('GET', '/api/mc-dm-categories/');
    const byId = new Map(
      counts.body.categories.map((c: { category_id: number; download_count: number }) => [
        c.category_id,
        c.download_count,
      ]),
    );
    // Three moves ended in the other category (runs 1 and 3; run 2 brought it back first).
    expect(byId.get(otherCategory)).toBe(1);
    expect(byId.get(firstCategory)).toBe(0);
    const events = await t.app.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM event_outbox WHERE type = 'download.updated' AND "downloadId" = $1`,
      [downloadId],
    );
    expect(events[0]!.n).toBeGreaterThanOrEqual(8);
  });

  for (const face of ['REST', 'GraphQL'] as const) {
    it(`${face}: posting a comment sends no Prisma query, and the comment and its event are there`, async () => {
      const sent = await prismaStatementsOf(async (i) => {
        if (face === 'REST') {
          const res = await t.rest('POST', '/api/mc-dm-comments/', {
            key: owner.key,
            form: { download_id: downloadId, message: `Fits ${face} ${i}` },
          });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.comment.message).toBe(`Fits ${face} ${i}`);
          expect(Math.abs(res.body.comment.comment_date * 1000 - Date.now())).toBeLessThan(60_000);
        } else {
          const res = await t.gqlOk(
            `mutation($input: CreateCommentInput!) { createComment(input: $input) { comment { message canEdit } } }`,
            { input: { downloadId, message: `Fits ${face} ${i}` } },
            owner.key,
          );
          expect(res.createComment.comment).toEqual({ message: `Fits ${face} ${i}`, canEdit: true });
        }
      });
      expect(sent).toEqual([]);
      const list = await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: downloadId, per_page: 100 } });
      const messages = list.body.comments.map((c: { message: string }) => c.message);
      for (let i = 0; i <= 3; i++) expect(messages).toContain(`Fits ${face} ${i}`);
      const events = await t.app.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM event_outbox o JOIN comment c ON c.id = o."objectId"
          WHERE o.type = 'comment.posted' AND c.message LIKE $1`,
        [`Fits ${face} %`],
      );
      expect(events[0]!.n).toBe(4);
    });
  }
});
