// What a client meets on its first wrong step, answered the same way on both faces: an address that does not exist,
// a body of a type the endpoint does not read, JSON that does not parse, an id that cannot name a row. Each answer
// carries the contract's code and a message a person can act on, and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const GRAPHQL_RESPONSE = 'application/graphql-response+json';

describe('first contact', () => {
  let t: TestApp;
  let ownerKey: string;
  let categoryId: number;
  beforeAll(async () => {
    t = await startTestApp('pglite');
    ownerKey = (await t.user('first_contact_owner')).key;
    categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'First contact' } })).body.category
      .category_id;
  });
  afterAll(() => t?.close());

  const raw = (path: string, init: RequestInit = {}) =>
    fetch(`${t.url}${path}`, { ...init, headers: { 'Forum-Api-Key': SUPER_KEY, ...init.headers } });

  describe('unknown addresses', () => {
    it('answer a small HTML page outside the API, for browsers', async () => {
      for (const path of ['/nope', '/downloadz/', '/favicon.ico', '/graphiql/nope.js']) {
        const res = await raw(path);
        expect(res.status, path).toBe(404);
        expect(res.headers.get('content-type')).toContain('text/html');
        const html = await res.text();
        expect(html).toContain('<h1>Nothing here</h1>');
        expect(html).toContain('href="/api/docs"');
      }
      const head = await raw('/nope', { method: 'HEAD' });
      expect(head.status).toBe(404);
      expect(await head.text()).toBe('');
    });

    it('answer JSON endpoint_not_found under /graphql/ and /api/', async () => {
      for (const path of ['/graphql/nope', '/api/nope', '/api/mc-dm-nope/']) {
        const res = await raw(path);
        expect(res.status, path).toBe(404);
        expect(res.headers.get('content-type')).toContain('application/json');
        expect(((await res.json()) as any).errors[0].code).toBe('endpoint_not_found');
      }
    });
  });

  describe('a body of a type the endpoint does not read', () => {
    it('answers 415 unsupported_media_type naming the types it reads, on both faces, creating nothing', async () => {
      const before = await t.prisma.category.count();
      for (const type of ['text/plain', 'application/xml', 'text/csv']) {
        const g = await raw('/graphql', {
          method: 'POST',
          headers: { 'content-type': type },
          body: '{"query":"mutation { createCategory(input: { title: \\"Sneaky\\" }) { category { categoryId } } }"}',
        });
        expect(g.status, type).toBe(415);
        const gb = (await g.json()) as any;
        expect(gb.errors[0].extensions).toMatchObject({
          code: 'unsupported_media_type',
          params: { content_type: type },
        });
        expect(gb.errors[0].extensions.params.accepted).toContain('application/json');
        expect(gb.errors[0].message).toContain('send application/json');

        const r = await raw('/api/mc-dm-categories/', {
          method: 'POST',
          headers: { 'content-type': type },
          body: 'title=Sneaky',
        });
        expect(r.status, type).toBe(415);
        const rb = (await r.json()) as any;
        expect(rb.errors[0]).toMatchObject({ code: 'unsupported_media_type', params: { content_type: type } });
        expect(rb.errors[0].params.accepted).toEqual([
          'application/x-www-form-urlencoded',
          'multipart/form-data',
          'application/json',
        ]);
      }
      expect(await t.prisma.category.count()).toBe(before);
    });

    it('leaves bodiless requests and the types each face reads alone', async () => {
      expect((await t.rest('DELETE', `/api/mc-dm-categories/${categoryId}/`, { query: { hard: 1 } })).status).toBe(200);
      categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { json: { title: 'First contact' } })).body.category
        .category_id;
      expect(categoryId).toBeGreaterThan(0);
    });
  });

  describe('JSON that does not parse', () => {
    it('answers 400 invalid_input (field body) with a plain message, under both media types, on both faces', async () => {
      for (const accept of ['application/json', GRAPHQL_RESPONSE]) {
        const g = await raw('/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept },
          body: '{"query":',
        });
        expect(g.status, accept).toBe(400);
        const body = (await g.json()) as any;
        expect(body.errors).toEqual([
          {
            message: 'The request body is not valid JSON.',
            extensions: { code: 'invalid_input', params: { field: 'body' } },
          },
        ]);
      }
      const r = await raw('/api/mc-dm-categories/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"title":',
      });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).errors[0]).toEqual({
        code: 'invalid_input',
        message: 'The request body is not valid JSON.',
        params: { field: 'body' },
      });
    });
  });

  describe('an id that cannot name a row', () => {
    it('answers 400 invalid_input naming the field on both faces: negative and zero ids', async () => {
      for (const id of [-1, 0]) {
        const rest = await t.rest('GET', `/api/mc-dm-categories/${id}/`);
        expect(rest.status, String(id)).toBe(400);
        expect(rest.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'category_id' } });
        for (const accept of ['application/json', GRAPHQL_RESPONSE]) {
          for (const [query, variables] of [
            [`{ category(categoryId: ${id}) { title } }`, undefined],
            ['query($id: Int!) { category(categoryId: $id) { title } }', { id }],
          ] as const) {
            const res = await raw('/graphql', {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept },
              body: JSON.stringify({ query, variables }),
            });
            expect(res.status, `${id} ${accept}`).toBe(400);
            const body = (await res.json()) as any;
            expect(body.data).toBeUndefined();
            expect(body.errors[0].extensions).toEqual({ code: 'invalid_input', params: { field: 'categoryId' } });
            expect(body.errors[0].message).toBe(`categoryId must be a whole number from 1 to 2147483647, got ${id}.`);
          }
        }
      }
    });

    it('answers 400 invalid_input on both faces for an id beyond 32 bits, written in the document or sent as a variable', async () => {
      const rest = await t.rest('GET', '/api/mc-dm-categories/99999999999/');
      expect(rest.status).toBe(400);
      expect(rest.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'category_id' } });
      for (const accept of ['application/json', GRAPHQL_RESPONSE]) {
        for (const [query, variables] of [
          ['{ category(categoryId: 99999999999) { title } }', undefined],
          ['query($id: Int!) { category(categoryId: $id) { title } }', { id: 99999999999 }],
        ] as const) {
          const res = await raw('/graphql', {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept },
            body: JSON.stringify({ query, variables }),
          });
          expect(res.status, `${query} ${accept}`).toBe(400);
          const body = (await res.json()) as any;
          expect(body.errors[0].extensions.code).toBe('invalid_input');
          expect(body.errors[0].message).toContain('2147483647');
        }
      }
    });

    it('names a field inside an input object, and refuses negative counts, changing nothing', async () => {
      const before = await t.prisma.download.count();
      const r = await t.gql(
        'mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId } } }',
        { i: { categoryId: -4, title: 'Never' } },
        ownerKey,
      );
      expect(r.errors?.[0]?.extensions).toEqual({ code: 'invalid_input', params: { field: 'input.categoryId' } });
      const rest = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: ownerKey,
        form: { category_id: -4, title: 'Never' },
      });
      expect(rest.status).toBe(400);
      expect(rest.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'category_id' } });
      expect(await t.prisma.download.count()).toBe(before);
      const page = await t.gql('{ categories(perPage: -3) { nodes { title } } }');
      expect(page.errors?.[0]?.extensions).toEqual({ code: 'invalid_input', params: { field: 'perPage' } });
      // 0 is a legal value where it means "none" (an optional id) or is a count
      const ok = await t.gql(`{ category(categoryId: ${categoryId}) { title } }`);
      expect(ok.errors).toBeUndefined();
    });
  });

  describe('static files', () => {
    it('travel compressed (br, else gzip) with an ETag, and a repeat costs an empty 304', async () => {
      const plain = await raw('/graphiql/graphiql.js', { headers: { 'accept-encoding': 'identity' } });
      const size = (await plain.arrayBuffer()).byteLength;
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(size).toBeGreaterThan(1_000_000);
      const etag = plain.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]+"$/);
      for (const [accept, encoding] of [
        ['gzip, deflate, br', 'br'],
        ['gzip', 'gzip'],
      ] as const) {
        // Node's fetch decodes the body itself; the header and the length on the wire say what was sent
        const res = await raw('/graphiql/graphiql.js', { headers: { 'accept-encoding': accept } });
        expect(res.headers.get('content-encoding')).toBe(encoding);
        expect(Number(res.headers.get('content-length'))).toBeLessThan(size / 3);
        expect(res.headers.get('vary')).toContain('Accept-Encoding');
        expect((await res.arrayBuffer()).byteLength).toBe(size);
      }
      const again = await raw('/graphiql/graphiql.js', { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    });

    it('pages name their files (GraphiQL, Swagger UI) by versioned addresses, kept for a year; pages themselves are revalidated', async () => {
      const page = await raw('/graphql', { headers: { accept: 'text/html' } });
      const html = await page.text();
      const addresses = [...html.matchAll(/(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((m) => m[1]!);
      expect(addresses.length).toBeGreaterThanOrEqual(4);
      for (const address of addresses) {
        expect(address).toMatch(/\?v=[\w.-]+$/);
        const res = await raw(address);
        expect(res.status, address).toBe(200);
        expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      }
      expect(html).toContain('href="/" class="home"');
      // the REST reference's Swagger UI likewise: versioned, kept for a year, its bundle compressed
      const docs = await (await raw('/api/docs')).text();
      const docAddresses = [...docs.matchAll(/(?:src|href)="(\/api\/docs\/[^"]+)"/g)].map((m) => m[1]!);
      expect(docAddresses).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^\/api\/docs\/swagger-ui-bundle\.js\?v=[\w-]+$/),
          expect.stringMatching(/^\/api\/docs\/swagger-ui\.css\?v=[\w-]+$/),
        ]),
      );
      for (const address of docAddresses) {
        expect(address).toMatch(/\?v=[\w.-]+$/);
        const res = await raw(address, { headers: { 'accept-encoding': 'br, gzip' } });
        expect(res.status, address).toBe(200);
        expect(res.headers.get('cache-control'), address).toBe('public, max-age=31536000, immutable');
        expect(res.headers.get('etag'), address).toMatch(/^"[\w-]+"$/);
      }
      const bundle = docAddresses.find((a) => a.includes('swagger-ui-bundle.js'))!;
      const plainBundle = await raw(bundle, { headers: { 'accept-encoding': 'identity' } });
      const bundleSize = (await plainBundle.arrayBuffer()).byteLength;
      const brBundle = await raw(bundle, { headers: { 'accept-encoding': 'br, gzip' } });
      expect(brBundle.headers.get('content-encoding')).toBe('br');
      expect(Number(brBundle.headers.get('content-length'))).toBeLessThan(bundleSize / 3);
      // an address naming other bytes (a page from another build) is served, but not kept as if it named these
      for (const stale of ['/graphiql/graphiql.js?v=0.0.0', '/api/docs/swagger-ui.css?v=older']) {
        const res = await raw(stale);
        expect(res.status, stale).toBe(200);
        expect(res.headers.get('cache-control'), stale).toBe('no-cache');
      }
      const start = await raw('/');
      expect(start.headers.get('cache-control')).toBe('no-cache');
      const unversioned = await raw('/site.css');
      expect(unversioned.headers.get('cache-control')).toBe('public, max-age=3600');
    });
  });
});
