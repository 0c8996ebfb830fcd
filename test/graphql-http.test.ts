// GraphQL over HTTP on /graphql: statuses by media type, contract codes on every error, and the graphql-http audit
// suite against the real server with a key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverAudits } from 'graphql-http';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { isContractCode } from '../src/errors.js';

const JSON_TYPE = { accept: 'application/json' };
const GRAPHQL_RESPONSE = { accept: 'application/graphql-response+json' };

forEachDatabase((kind) => {
  let t: TestApp;
  let user: { userId: number; key: string };
  let downloadId: number;
  beforeAll(async () => {
    t = await startTestApp(kind);
    user = await t.user('member');
    const cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Main' } })).body.category.category_id;
    downloadId = (
      await t.rest('POST', '/api/mc-dm-downloads/', { key: user.key, form: { category_id: cat, title: 'One' } })
    ).body.download.download_id;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** POSTs a raw body to /graphql; returns status, content type and the parsed body. */
  const post = async (body: string, headers: Record<string, string> = {}, key: string | null = SUPER_KEY) => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'Forum-Api-Key': key } : {}), ...headers },
      body,
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      body: json,
      retryAfter: res.headers.get('retry-after'),
    };
  };

  describe('executed operations', () => {
    it('answer 200 when data is not null, under both media types, with the error in the body', async () => {
      const q = '{ viewer { userId } category(categoryId: 99999) { title } }';
      for (const headers of [{}, JSON_TYPE, GRAPHQL_RESPONSE]) {
        const r = await t.gql(q, {}, SUPER_KEY, headers);
        expect(r.status).toBe(200);
        expect(r.data).toEqual({ viewer: { userId: 0 }, category: null });
        expect(r.codes).toEqual(['mc_dm_api_error.category_not_found']);
        expect(r.errors![0].extensions.http).toBeUndefined();
      }
    });

    it("without data: 200 under application/json, the first error's status under graphql-response+json", async () => {
      // `nodes` is a non-null root field: its error leaves no data at all.
      const q = `{ nodes(ids: ["nonsense"]) { id } }`;
      const plain = await t.gql(q, {}, user.key, JSON_TYPE);
      expect(plain.status).toBe(200);
      expect(plain.data).toBeNull();
      expect(plain.codes).toEqual(['invalid_input']);
      const none = await t.gql(q, {}, user.key);
      expect(none.status).toBe(200);
      const strict = await post(JSON.stringify({ query: q }), GRAPHQL_RESPONSE, user.key);
      expect(strict.status).toBe(400);
      expect(strict.type).toContain('application/graphql-response+json');
      expect(strict.body.data).toBeNull();
      expect(strict.body.errors[0].extensions.code).toBe('invalid_input');
      // A refused mutation is null on its own (mutation fields are nullable): that is data, so 200 under both.
      const guest = await t.key('GUEST', ['all']);
      const denied = await t.gql(
        `mutation { createComment(input: { downloadId: ${downloadId}, message: "x" }) { comment { commentId } } }`,
        {},
        guest,
        GRAPHQL_RESPONSE,
      );
      expect(denied.status).toBe(200);
      expect(denied.data).toEqual({ createComment: null });
      expect(denied.codes).toEqual(['do_not_have_permission']);
      expect(
        (
          await t.gql(
            `mutation { createComment(input: { downloadId: ${downloadId}, message: "x" }) { comment { commentId } } }`,
            {},
            guest,
          )
        ).status,
      ).toBe(200);
      expect(await t.prisma.comment.count()).toBe(0);
    });

    it('a document that does not validate: 200 under application/json, 400 under graphql-response+json, invalid_input', async () => {
      const q = '{ viewer { nope } }';
      const plain = await t.gql(q, {}, SUPER_KEY, JSON_TYPE);
      expect(plain.status).toBe(200);
      expect(plain.codes).toEqual(['invalid_input']);
      const strict = await t.gql(q, {}, SUPER_KEY, GRAPHQL_RESPONSE);
      expect(strict.status).toBe(400);
      expect(strict.codes).toEqual(['invalid_input']);
      expect(strict.data).toBeUndefined();
    });
  });

  describe('requests refused before execution keep their status under both media types', () => {
    for (const headers of [JSON_TYPE, GRAPHQL_RESPONSE]) {
      it(`with Accept: ${headers.accept}`, async () => {
        const viewer = JSON.stringify({ query: '{ viewer { userId } }' });
        const cases: [string, Awaited<ReturnType<typeof post>>, number, string][] = [
          ['no key', await post(viewer, headers, null), 401, 'no_api_key_in_request'],
          ['unknown key', await post(viewer, headers, 'dm_nope'), 401, 'api_key_not_found'],
          [
            'body too large',
            await post(
              JSON.stringify({ query: '{ viewer { userId } }', variables: { pad: 'x'.repeat(t.config.maxBodyBytes) } }),
              headers,
            ),
            413,
            'request_too_large',
          ],
          ['malformed JSON', await post('{"query": ', headers), 400, 'invalid_input'],
          [
            'too expensive',
            await post(
              JSON.stringify({
                query: `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: viewer { userId }`).join(' ')} }`,
              }),
              headers,
            ),
            400,
            'operation_too_expensive',
          ],
          [
            'too many tokens',
            await post(JSON.stringify({ query: `{ viewer { ${'userId '.repeat(10001)} } }` }), headers),
            400,
            'operation_too_expensive',
          ],
          [
            'unknown persisted document',
            await post(JSON.stringify({ documentId: 'a'.repeat(64) }), headers),
            400,
            'persisted_document_not_found',
          ],
          [
            'unknown automatic persisted query',
            await post(
              JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } }),
              headers,
            ),
            400,
            'PERSISTED_QUERY_NOT_FOUND',
          ],
          [
            'bad variables',
            await post(
              JSON.stringify({
                query: 'query($id: Int!) { download(downloadId: $id) { title } }',
                variables: { id: 'one' },
              }),
              headers,
            ),
            400,
            'invalid_input',
          ],
        ];
        for (const [what, r, status, code] of cases) {
          expect(r.status, what).toBe(status);
          expect(r.body.errors[0].extensions.code, what).toBe(code);
          expect(r.body.data, what).toBeUndefined();
          expect(r.body.errors[0].message, what).not.toBe('');
        }
      });
    }
  });

  it('gives every error a contract code, framework errors included', async () => {
    const responses = [
      await post(JSON.stringify({ query: '{ viewer { userId ' })),
      await post(JSON.stringify({ query: 42 })),
      await post(JSON.stringify({})),
      await post(JSON.stringify({ query: '{ viewer { userId } }', nonsense: 1 })),
      await post(JSON.stringify({ query: '{ viewer { userId } }', variables: 'x' })),
      await post('[]'),
      await post('null'),
      await post(JSON.stringify({ query: 'query A { viewer { userId } } query B { viewer { userId } }' })),
      await post(JSON.stringify({ query: '{ viewer { userId } }', operationName: 'Nope' })),
      await post(JSON.stringify({ query: 'subscription { nope }' })),
      await post(JSON.stringify({ query: '{ download(downloadId: 1.5) { title } }' })),
    ];
    const get = await fetch(
      `${t.url}/graphql?query=${encodeURIComponent('mutation { createCategory(input: { title: "x" }) { category { categoryId } } }')}`,
      {
        headers: { 'Forum-Api-Key': SUPER_KEY, accept: 'application/json' },
      },
    );
    expect(get.status).toBe(405);
    const getBody = (await get.json()) as any;
    for (const r of [...responses, { status: get.status, body: getBody }]) {
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
      expect(r.body.errors?.length, JSON.stringify(r.body)).toBeGreaterThan(0);
      for (const e of r.body.errors) expect(isContractCode(e.extensions?.code), JSON.stringify(e)).toBe(true);
    }
    expect(getBody.errors[0].extensions.code).toBe('method_not_allowed');
    expect(await t.prisma.category.count()).toBe(1);
  });

  it("keeps the REST face's statuses", async () => {
    expect((await t.rest('GET', '/api/mc-dm-downloads/99999/')).status).toBe(404);
    const guest = await t.key('GUEST', ['all']);
    expect(
      (await t.rest('POST', '/api/mc-dm-comments/', { key: guest, form: { download_id: downloadId, message: 'x' } }))
        .status,
    ).toBe(403);
    expect((await t.rest('POST', '/api/mc-dm-categories/', { form: { title: '' } })).status).toBe(400);
  });

  it('passes every MUST of the graphql-http audit suite with a key', async () => {
    const fetchFn = (input: RequestInfo | URL, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set('Forum-Api-Key', SUPER_KEY);
      return fetch(input, { ...init, headers });
    };
    const audits = serverAudits({ url: `${t.url}/graphql`, fetchFn });
    const results = await Promise.all(audits.map(async (a) => ({ name: a.name, result: await a.fn() })));
    const failed = results.filter((r) => r.result.status !== 'ok');
    const must = results.filter((r) => r.name.startsWith('MUST'));
    const should = results.filter((r) => r.name.startsWith('SHOULD'));
    const count = (rs: typeof results) => `${rs.filter((r) => r.result.status === 'ok').length}/${rs.length}`;
    console.log(
      `${kind}: graphql-http audits: ${count(results)} ok; MUST ${count(must)}, SHOULD ${count(should)}` +
        (failed.length
          ? `; not ok: ${failed.map((f) => `${f.name} (${f.result.status === 'ok' ? '' : f.result.reason})`).join('; ')}`
          : ''),
    );
    expect(must.filter((r) => r.result.status !== 'ok').map((r) => r.name)).toEqual([]);
    expect(must.length).toBeGreaterThan(10);
  });
});
