// Queries /graphql has run before are answered directly, without Yoga's pipeline (src/http/known-queries.ts): the same
// status, headers and bytes as the pipeline gives, under every Accept header the path takes; anything it does not
// answer (errors, refusals, other media types, persisted documents, mutations, @defer) is answered as the pipeline
// answers it, with the request's key read and its rate limit counted once; an answer kept by one path is given by the
// other; a trusted document named by its id is answered directly too (with trusted documents only, only by its id).
// Both databases, in-process and over HTTP.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

/** /graphql requests for known queries so far, by path, from /metrics. */
async function known(t: TestApp): Promise<{ direct: number; handedBack: number }> {
  const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
  const of = (p: string) =>
    Number(new RegExp(`^dcs_graphql_known_queries_total\\{path="${p}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { direct: of('direct'), handedBack: of('handed_back') };
}

interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A response as a client sees it, but for the headers that differ on every response (its date). */
async function seen(res: Response): Promise<Seen> {
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== 'date') headers[k] = v;
  });
  return { status: res.status, headers, body: await res.text() };
}

forEachDatabase((kind) => {
  let t: TestApp;
  let downloadId: number;
  let member: { userId: number; key: string };
  beforeAll(async () => {
    t = await startTestApp(kind, { readCacheMb: 0 });
    member = await t.user('member');
    const categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Main' } })).body.category
      .category_id;
    downloadId = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        key: member.key,
        form: { category_id: categoryId, title: 'One' },
      })
    ).body.download.download_id;
    await t.rest('POST', '/api/mc-dm-comments/', { key: member.key, form: { download_id: downloadId, message: 'Hi' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Sends one raw request three times: the first through the pipeline, the next ones answered directly if at all. */
  const thrice = async (body: string, headers: Record<string, string> = {}, overHttp = false) => {
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'forum-api-key': SUPER_KEY, ...headers },
      body,
    };
    const send = () => (overHttp ? fetch(`${t.url}/graphql`, init) : t.send('/graphql', init));
    const before = await known(t);
    const answers = [await seen(await send()), await seen(await send()), await seen(await send())];
    const after = await known(t);
    return { answers, direct: after.direct - before.direct, handedBack: after.handedBack - before.handedBack };
  };

  it('answers a query run before directly: the same status, headers and bytes as the pipeline', async () => {
    const bodies = [
      JSON.stringify({ query: `{ download(downloadId: ${downloadId}) { downloadId title owner { username } } }` }),
      JSON.stringify({
        query: 'query D($id: Int!) { download(downloadId: $id) { title comments { nodes { message } } } }',
        variables: { id: downloadId },
      }),
      // Two operations: the one named runs.
      JSON.stringify({
        query: 'query A { viewer { userId } } query B { categories(perPage: 5) { nodes { title } } }',
        operationName: 'B',
        variables: null,
      }),
    ];
    for (const body of bodies) {
      for (const accept of [
        undefined,
        '*/*',
        'application/json',
        'application/graphql-response+json',
        'application/json; charset=utf-8',
      ]) {
        for (const overHttp of [false, true]) {
          const r = await thrice(`${body} `, accept ? { accept } : {}, overHttp);
          expect(r.answers[0]!.status).toBe(200);
          expect(JSON.parse(r.answers[0]!.body).errors).toBeUndefined();
          expect(r.answers[1]).toEqual(r.answers[0]);
          expect(r.answers[2]).toEqual(r.answers[0]);
          // The first time this exact text is sent it runs through the pipeline; the later ones are answered here.
          expect(r.direct).toBeGreaterThanOrEqual(2);
        }
      }
    }
  });

  it('leaves to the pipeline, answered as it answers them, what it does not answer', async () => {
    const download = 'query D($id: Int!) { download(downloadId: $id) { title } }';
    const costly = `query L($n: Int) { ${Array.from({ length: 20 }, (_, i) => `a${i}: downloads(perPage: $n) { nodes { ${'category { title } '.repeat(10)} } }`).join(' ')} }`;
    const body =
      (variables: unknown, extra: Record<string, unknown> = {}) =>
      (query: string) =>
        JSON.stringify({ query, variables, ...extra });
    const good = { id: downloadId };
    // [what, query, the request refused or not answered here, a request of the same query that succeeds, headers]
    const cases: [string, string, (q: string) => string, (q: string) => string, Record<string, string>?][] = [
      // errors in the answer: handed back with the outcome
      ['not found', download, body({ id: 999_999 }), body(good)],
      [
        'refused for the key',
        '{ apiKeys { nodes { apiKeyId } } }',
        body(undefined),
        body(undefined),
        { 'forum-api-key': member.key },
      ],
      // refused before execution: left untouched
      ['id below 1', download, body({ id: -1 }), body(good)],
      ['variable of the wrong type', download, body({ id: 'x' }), body(good)],
      ['missing variable', download, body({}), body(good)],
      [
        'U+0000 in a variable',
        'query S($q: String) { downloads(q: $q, perPage: 1) { nodes { title } } }',
        body({ q: 'a\u0000' }),
        body({ q: 'a' }),
      ],
      ['over the cost limit', costly, body({ n: 100 }), body({ n: 2 })],
      ['a bad key', download, body(good), body(good), { 'forum-api-key': 'dm_nope' }],
      ['no key', download, body(good), body(good), { 'forum-api-key': '' }],
      // parameters this path does not take
      ['variables as a string', download, body(JSON.stringify(good)), body(good)],
      ['extensions', download, body(good, { extensions: { something: true } }), body(good)],
      ['not JSON', download, (q) => body(good)(q).slice(0, -1), body(good)],
      ['an Accept it does not answer', download, body(good), body(good), { accept: 'text/html' }],
      [
        'an Accept with several types',
        download,
        body(good),
        body(good),
        { accept: 'application/graphql-response+json, application/json;q=0.9' },
      ],
    ];
    const send = (text: string, headers: Record<string, string> = {}) =>
      t.send('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'forum-api-key': SUPER_KEY, ...headers },
        body: text,
      });
    for (const [i, [what, query, refused, succeeds, headers]] of cases.entries()) {
      // Two texts of the same operation (trailing blank lines: error locations stay): one never run before, which only
      // the pipeline can answer; one run by the pipeline first, which this path knows.
      const unknown = `${query}\n${' '.repeat(i + 1)}`;
      const knownText = `${unknown}\n`;
      const pipeline = await seen(await send(refused(unknown), headers));
      expect((await send(succeeds(knownText))).status, what).toBe(200);
      const before = await known(t);
      const answered = await seen(await send(refused(knownText), headers));
      expect((await known(t)).direct - before.direct, what).toBe(0);
      // Key order aside (an interpreted run puts errors before data, a compiled one after): the same answer.
      const parsed = (r: Seen) => ({ ...r, body: r.body ? JSON.parse(r.body) : r.body });
      expect(parsed(answered), what).toEqual(parsed(pipeline));
      expect(pipeline.status, what).not.toBe(500);
    }
  });

  it('hands an answer with errors back with its outcome: run once, coded and given its status by the pipeline', async () => {
    const query = `query D($id: Int!) { download(downloadId: $id) { title } }`;
    await t.gql(query, { id: downloadId }); // the pipeline runs it once: known from now on
    const before = await known(t);
    const r = await t.gql(query, { id: 999_998 }, SUPER_KEY, { accept: 'application/graphql-response+json' });
    expect(r.codes).toEqual(['mc_dm_api_error.download_not_found']);
    expect(r.status).toBe(200); // data beside the error: 200, as the pipeline answers it
    expect(r.data).toEqual({ download: null });
    const after = await known(t);
    expect(after.handedBack - before.handedBack).toBe(1);
    expect(after.direct - before.direct).toBe(0);
  });

  it('remembers no mutation, subscription, @defer or persisted document', async () => {
    const deferred = `{ download(downloadId: ${downloadId}) { title ... @defer { owner { username } } } }`;
    const r = await thrice(JSON.stringify({ query: deferred }), { accept: 'multipart/mixed' });
    expect(r.direct).toBe(0);
    const m = await thrice(
      JSON.stringify({ query: 'mutation { createCategory(input: { title: "Made" }) { category { title } } }' }),
    );
    expect(m.direct).toBe(0);
    for (const a of m.answers)
      expect(JSON.parse(a.body)).toEqual({ data: { createCategory: { category: { title: 'Made' } } } });
  });
});

forEachDatabase((kind) => {
  describe('with the rate limit and the read cache on', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(kind, { rateLimitPerMinute: 6 });
    });
    afterAll(async () => {
      await t?.close();
    });

    it("counts a request's key once against its rate limit, answered here or handed back", async () => {
      const key = await t.key('GUEST', ['mc_dm_category:read', 'mc_dm_download:read']);
      const query = 'query D($id: Int!) { download(downloadId: $id) { title } }';
      // The pipeline runs it (1), then it is answered here (2), then handed back with its error three times (3–5): if a
      // request handed back were counted again, the budget would be spent before the sixth.
      expect((await t.gql(query, { id: 1 }, key)).status).toBeLessThan(500);
      expect((await t.gql(query, { id: 1 }, key)).status).toBeLessThan(500);
      for (let i = 0; i < 3; i++)
        expect((await t.gql(query, { id: 999_990 + i }, key)).codes).toEqual(['mc_dm_api_error.download_not_found']);
      const sixth = await t.send('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'forum-api-key': key },
        body: JSON.stringify({ query, variables: { id: 1 } }),
      });
      expect(sixth.status).toBeLessThan(300);
      expect(sixth.headers.get('ratelimit-remaining')).toBe('0');
      const seventh = await t.gql(query, { id: 1 }, key);
      expect(seventh.status).toBe(429);
      expect(seventh.codes).toEqual(['mc_dm_api_error.rate_limited']);
    });

    it('gives an answer kept by either path from the other', async () => {
      const categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Kept' } })).body.category
        .category_id;
      const query = 'query C($id: Int!) { category(categoryId: $id) { title } }';
      const hits = async () => {
        const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
        return Number(/^dcs_read_cache_total\{result="hit"\} (\d+)/m.exec(text)?.[1] ?? NaN);
      };
      const h0 = await hits();
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await t.gqlOk(query, { id: categoryId }));
      for (const a of answers) expect(a).toEqual({ category: { title: 'Kept' } });
      expect(await hits()).toBeGreaterThan(h0);
      // A write is seen by the next read, whichever path answers it.
      await t.rest('PUT', `/api/mc-dm-categories/${categoryId}/`, { form: { title: 'Renamed' } });
      expect(await t.gqlOk(query, { id: categoryId })).toEqual({ category: { title: 'Renamed' } });
    });
  });
});

forEachDatabase((kind) => {
  describe('trusted documents only', () => {
    const CATEGORIES = 'query Cats($n: Int) { categories(perPage: $n) { nodes { title } } }';
    const id = crypto.createHash('sha256').update(CATEGORIES, 'utf8').digest('hex');
    let t: TestApp;
    let dir: string;
    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-known-'));
      const file = path.join(dir, 'documents.json');
      fs.writeFileSync(file, JSON.stringify({ [`sha256:${id}`]: CATEGORIES }));
      t = await startTestApp(kind, {
        readCacheMb: 0,
        graphql: { ...loadConfig({}).graphql, persistedDocumentsPath: file, trustedDocumentsOnly: true },
      });
      await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Trusted' } });
    });
    afterAll(async () => {
      await t?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it("answers a trusted document named by its id directly, and never the same document's text", async () => {
      const send = (body: unknown) =>
        t
          .send('/graphql', {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'forum-api-key': SUPER_KEY },
            body: JSON.stringify(body),
          })
          .then(seen);
      const before = await known(t);
      const byId = [];
      for (const documentId of [id, `sha256:${id}`, id]) byId.push(await send({ documentId, variables: { n: 5 } }));
      expect(JSON.parse(byId[0]!.body)).toEqual({ data: { categories: { nodes: [{ title: 'Trusted' }] } } });
      expect(byId[1]).toEqual(byId[0]);
      expect(byId[2]).toEqual(byId[0]);
      const middle = await known(t);
      expect(middle.direct - before.direct).toBe(2);
      // Its text, now known, is still refused: only ids run here.
      const byText = await send({ query: CATEGORIES, variables: { n: 5 } });
      expect(byText.status).toBe(400);
      expect(JSON.parse(byText.body).errors[0].extensions.code).toBe('persisted_document_required');
      expect((await known(t)).direct).toBe(middle.direct);
      // An id the file does not hold is the pipeline's to refuse.
      const unknown = await send({ documentId: 'f'.repeat(64) });
      expect(unknown.status).not.toBe(200);
      expect((await known(t)).direct).toBe(middle.direct);
    });
  });
});
