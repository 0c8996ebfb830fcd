// Trusted documents: persisted operations by SHA-256 (Apollo's extension or documentId), the trusted-only mode,
// the file checked at start, and the REST face unaffected.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { ApqStore, loadTrustedDocuments, sha256 } from '../src/graphql/trusted-documents.js';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { schema } from '../src/modules/index.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-trusted-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const write = (name: string, content: unknown) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
};

const VIEWER = 'query Viewer { viewer { userId isSuperKey } }';
const CATEGORY = 'query Category($id: Int!) { category(categoryId: $id) { title } }';
const CREATE =
  'mutation Create($title: String!) { createCategory(input: { title: $title }) { category { categoryId title } } }';
const ALIASES = `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: viewer { userId }`).join(' ')} }`;
const DOCUMENTS = Object.fromEntries([VIEWER, CATEGORY, CREATE, ALIASES].map((d) => [sha256(d), d]));
const DEFAULTS = loadConfig({}).graphql;
const GRAPHQL_RESPONSE = { accept: 'application/graphql-response+json' };

describe('the documents file', () => {
  const bad = (name: string, content: unknown, message: string | RegExp) => {
    const file = write(name, content);
    expect(() => loadTrustedDocuments(file, schema)).toThrow(ConfigError);
    expect(() => loadTrustedDocuments(file, schema)).toThrow(file);
    expect(() => loadTrustedDocuments(file, schema)).toThrow(message);
  };

  it('loads { "<sha256>": "<document>" }', () => {
    const docs = loadTrustedDocuments(write('good.json', DOCUMENTS), schema);
    expect(docs.size).toBe(4);
    expect(docs.get(sha256(VIEWER))).toBe(VIEWER);
    expect(loadTrustedDocuments(undefined, schema).size).toBe(0);
  });

  it("loads GraphQL Code Generator's client-preset file, whose ids are written sha256:<hex>", () => {
    const preset = Object.fromEntries(Object.entries(DOCUMENTS).map(([hash, doc]) => [`sha256:${hash}`, doc]));
    const docs = loadTrustedDocuments(write('preset.json', preset), schema);
    expect(docs.size).toBe(4);
    expect(docs.get(sha256(CATEGORY))).toBe(CATEGORY);
    bad('preset-bad.json', { [`sha1:${sha256(VIEWER)}`]: VIEWER }, /optionally written sha256:<hex>/);
  });

  it('refuses a bad file with a message naming the file and the entry', () => {
    expect(() => loadTrustedDocuments(path.join(dir, 'missing.json'), schema)).toThrow(/missing\.json: cannot be read/);
    bad('broken.json', '{ "a": ', /is not valid JSON/);
    bad('array.json', [VIEWER], /must be a JSON object/);
    bad('key.json', { 'not-a-hash': VIEWER }, /"not-a-hash" is not a SHA-256/);
    bad('empty.json', { [sha256('')]: '' }, /not a non-empty string/);
    bad(
      'mismatch.json',
      { [sha256(VIEWER)]: CATEGORY },
      new RegExp(`${sha256(VIEWER)} is not the SHA-256 of its document`),
    );
    bad('syntax.json', { [sha256('{ viewer {')]: '{ viewer {' }, /does not parse/);
    bad('schema.json', { [sha256('{ nope }')]: '{ nope }' }, /does not match the schema: Cannot query field "nope"/);
  });

  it('stops the start on a bad file, before the database is opened', async () => {
    const file = write('start.json', { [sha256('{ nope }')]: '{ nope }' });
    const config = loadConfig({ DATA_DIR: path.join(dir, 'data'), PORT: '0', GRAPHQL_PERSISTED_DOCUMENTS: file });
    await expect(startApp(config, { log: createLogger('silent') })).rejects.toThrow(ConfigError);
    expect(fs.existsSync(path.join(dir, 'data'))).toBe(false);
  });

  it('reads the settings; trusted-only needs a documents file', () => {
    const file = write('settings.json', DOCUMENTS);
    expect(
      loadConfig({ GRAPHQL_PERSISTED_DOCUMENTS: file, GRAPHQL_TRUSTED_DOCUMENTS_ONLY: '1' }).graphql,
    ).toMatchObject({ persistedDocumentsPath: file, trustedDocumentsOnly: true });
    expect(() => loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS_ONLY: '1' })).toThrow(
      /GRAPHQL_TRUSTED_DOCUMENTS_ONLY=1 needs GRAPHQL_PERSISTED_DOCUMENTS/,
    );
    expect(() => loadConfig({ GRAPHQL_PERSISTED_DOCUMENTS: file, GRAPHQL_TRUSTED_DOCUMENTS_ONLY: 'yes' })).toThrow(
      ConfigError,
    );
  });
});

forEachDatabase((kind) => {
  /** POST /graphql with an arbitrary body. */
  const post = async (t: TestApp, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY, ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const apollo = (doc: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(doc) } });

  describe('persisted documents beside ordinary queries', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(kind, {
        graphql: {
          ...DEFAULTS,
          persistedDocumentsPath: write(`docs-${kind}.json`, DOCUMENTS),
          trustedDocumentsOnly: false,
        },
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    it("runs a document named by Apollo's sha256Hash or by documentId, with variables", async () => {
      const a = await post(t, { extensions: apollo(VIEWER) });
      expect(a).toEqual({ status: 200, body: { data: { viewer: { userId: 0, isSuperKey: true } } } });
      const created = await post(t, { documentId: sha256(CREATE), variables: { title: 'Persisted' } });
      expect(created.status).toBe(200);
      const id = created.body.data.createCategory.category.categoryId;
      const b = await post(t, { documentId: `sha256:${sha256(CATEGORY)}`, variables: { id } });
      expect(b.body).toEqual({ data: { category: { title: 'Persisted' } } });
      // GET, as Apollo sends persisted queries
      const url = new URL('/graphql', t.url);
      url.searchParams.set('extensions', JSON.stringify(apollo(CATEGORY)));
      url.searchParams.set('variables', JSON.stringify({ id }));
      const get = await fetch(url, { headers: { 'Forum-Api-Key': SUPER_KEY } });
      expect(get.status).toBe(200);
      expect(await get.json()).toEqual({ data: { category: { title: 'Persisted' } } });
    });

    it('still accepts ordinary queries', async () => {
      expect((await t.gqlOk('{ viewer { userId } }')).viewer.userId).toBe(0);
    });

    it('answers 400 persisted_document_not_found for an unknown documentId, under both media types', async () => {
      for (const headers of [{}, GRAPHQL_RESPONSE]) {
        const r = await post(t, { documentId: 'f'.repeat(64) }, headers);
        expect(r.status).toBe(400);
        expect(r.body.data).toBeUndefined();
        expect(r.body.errors[0].extensions.code).toBe('persisted_document_not_found');
        expect(r.body.errors[0].message).toContain('No trusted document has the hash');
      }
    });

    it('takes documentId in a GET query string, bare or written sha256:<hex>', async () => {
      for (const documentId of [sha256(VIEWER), `sha256:${sha256(VIEWER)}`]) {
        const url = new URL('/graphql', t.url);
        url.searchParams.set('documentId', documentId);
        const get = await fetch(url, { headers: { 'Forum-Api-Key': SUPER_KEY } });
        expect(get.status).toBe(200);
        expect(await get.json()).toEqual({ data: { viewer: { userId: 0, isSuperKey: true } } });
      }
      const url = new URL('/graphql', t.url);
      url.searchParams.set('documentId', 'e'.repeat(64));
      const unknown = await fetch(url, { headers: { 'Forum-Api-Key': SUPER_KEY } });
      expect(unknown.status).toBe(400);
      expect(((await unknown.json()) as any).errors[0].extensions.code).toBe('persisted_document_not_found');
    });

    it("automatic persisted queries: an unknown hash answers Apollo's PersistedQueryNotFound; hash + query registers it", async () => {
      const doc = `query Apq${kind} { viewer { userId } }`;
      for (const headers of [{}, GRAPHQL_RESPONSE]) {
        const r = await post(t, { extensions: apollo(`${doc} # ${JSON.stringify(headers)}`) }, headers);
        expect(r.status).toBe(400);
        expect(r.body.data).toBeUndefined();
        expect(r.body.errors[0]).toMatchObject({
          message: 'PersistedQueryNotFound',
          extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
        });
      }
      const registered = await post(t, { query: doc, extensions: apollo(doc) });
      expect(registered).toEqual({ status: 200, body: { data: { viewer: { userId: 0 } } } });
      expect(await post(t, { extensions: apollo(doc) })).toEqual(registered);
      const url = new URL('/graphql', t.url);
      url.searchParams.set('extensions', JSON.stringify(apollo(doc)));
      const get = await fetch(url, { headers: { 'Forum-Api-Key': SUPER_KEY } });
      expect(await get.json()).toEqual(registered.body);
    });

    it('registers nothing whose hash is wrong, or that does not validate', async () => {
      const doc = `query Wrong${kind} { viewer { userId } }`;
      const wrong = await post(t, { query: doc, extensions: apollo('{ viewer { isSuperKey } }') });
      expect(wrong.status).toBe(400);
      expect(wrong.body.errors[0].extensions).toMatchObject({
        code: 'invalid_input',
        params: { field: 'extensions.persistedQuery.sha256Hash' },
      });
      expect(wrong.body.errors[0].message).toContain('provided sha does not match query');
      const invalid = `query Invalid${kind} { nope }`;
      const refused = await post(t, { query: invalid, extensions: apollo(invalid) });
      expect(refused.body.errors[0].extensions.code).toBe('invalid_input');
      const later = await post(t, { extensions: apollo(invalid) });
      expect(later.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    });

    it("Apollo Client 4's persisted-query link: retries with the query once, then sends the hash alone (GET too)", async () => {
      const bodies: string[] = [];
      const recording: typeof fetch = (input, init) => {
        bodies.push(`${init?.method ?? 'GET'} ${init?.body ?? new URL(String(input)).search}`);
        return fetch(input, init);
      };
      const client = (useGETForHashedQueries: boolean) =>
        new ApolloClient({
          cache: new InMemoryCache(),
          link: ApolloLink.from([
            new PersistedQueryLink({ sha256: (q: string) => sha256(q), useGETForHashedQueries }),
            new HttpLink({ uri: `${t.url}/graphql`, headers: { 'Forum-Api-Key': SUPER_KEY }, fetch: recording }),
          ]),
        });
      const QUERY = gql`
        query ApolloApq${kind}($id: Int!) {
          category(categoryId: $id) {
            title
          }
        }
      `;
      const id = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Apq' } })).body.category.category_id;
      const first = await client(false).query({ query: QUERY, variables: { id } });
      expect(first.data).toEqual({ category: { __typename: 'Category', title: 'Apq' } });
      expect(bodies).toHaveLength(2);
      expect(bodies[0]).not.toContain('"query"');
      expect(bodies[1]).toContain('"query"');
      bodies.length = 0;
      for (const useGET of [false, true]) {
        const again = await client(useGET).query({ query: QUERY, variables: { id } });
        expect(again.data).toEqual(first.data);
      }
      expect(bodies).toHaveLength(2);
      expect(bodies[0]).toMatch(/^POST /);
      expect(bodies[1]).toMatch(/^GET .*extensions=/);
      for (const b of bodies) expect(b).not.toMatch(/"query"|[?&]query=/);
    });

    it('checks persisted documents like any other: limits and variables', async () => {
      const r = await post(t, { documentId: sha256(ALIASES) });
      expect(r.status).toBe(400);
      expect(r.body.errors[0].extensions).toMatchObject({
        code: 'operation_too_expensive',
        params: { kind: 'aliases', value: 31, limit: 30 },
      });
      const v = await post(t, { documentId: sha256(CATEGORY), variables: { id: 'one' } });
      expect(v.status).toBe(400);
      expect(v.body.errors[0].extensions.code).toBe('invalid_input');
    });
  });

  describe('trusted documents only', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(kind, {
        graphql: {
          ...DEFAULTS,
          persistedDocumentsPath: write(`only-${kind}.json`, DOCUMENTS),
          trustedDocumentsOnly: true,
        },
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('refuses any other document with 400 persisted_document_required, changing nothing', async () => {
      const before = await t.prisma.category.count();
      for (const headers of [{}, GRAPHQL_RESPONSE]) {
        for (const body of [
          { query: 'mutation { createCategory(input: { title: "Sneaky" }) { category { categoryId } } }' },
          { query: VIEWER }, // even the text of a trusted document: send its hash
          { query: VIEWER, extensions: apollo(VIEWER) },
          {},
        ]) {
          const r = await post(t, body, headers);
          expect(r.status, JSON.stringify(body)).toBe(400);
          expect(r.body.errors[0].extensions.code).toBe('persisted_document_required');
          expect(r.body.errors[0].message).toContain('trusted documents only');
        }
      }
      expect(await t.prisma.category.count()).toBe(before);
    });

    it('registers no automatic persisted query: an unknown hash is persisted_document_not_found', async () => {
      const r = await post(t, { extensions: apollo('{ viewer { userId } }') });
      expect(r.status).toBe(400);
      expect(r.body.errors[0].extensions.code).toBe('persisted_document_not_found');
    });

    it('runs trusted documents, and refuses unknown hashes', async () => {
      const created = await post(t, { extensions: apollo(CREATE), variables: { title: 'Trusted' } });
      expect(created.status).toBe(200);
      expect(created.body.data.createCategory.category.title).toBe('Trusted');
      const unknown = await post(t, { documentId: sha256('{ viewer { userId } }') });
      expect(unknown.status).toBe(400);
      expect(unknown.body.errors[0].extensions.code).toBe('persisted_document_not_found');
    });

    it('leaves the REST face working: its documents run in-process', async () => {
      const created = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Over REST' } });
      expect(created.status).toBe(200);
      const list = await t.rest('GET', '/api/mc-dm-categories/', { query: { per_page: 100 } });
      expect(list.status).toBe(200);
      expect(list.body.categories.map((c: any) => c.title)).toContain('Over REST');
      expect(
        (await t.rest('GET', `/api/mc-dm-categories/${created.body.category.category_id}/`)).body.category.title,
      ).toBe('Over REST');
    });
  });
});

describe('the automatic persisted queries store', () => {
  it('keeps the most recently used documents, at most its bound', () => {
    const store = new ApqStore(2);
    store.set('a', 'A');
    store.set('b', 'B');
    expect(store.get('a')).toBe('A'); // a is now the most recent
    store.set('c', 'C');
    expect(store.get('b')).toBeUndefined();
    expect([store.get('a'), store.get('c'), store.size]).toEqual(['A', 'C', 2]);
    const off = new ApqStore(0);
    off.set('a', 'A');
    expect(off.size).toBe(0);
  });
});
