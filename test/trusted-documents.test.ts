// Trusted documents: persisted operations by SHA-256 (Apollo's extension or documentId), the trusted-only mode,
// the file checked at start, and the REST face unaffected.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { loadTrustedDocuments, sha256 } from '../src/graphql/trusted-documents.js';
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

    it('answers 400 persisted_document_not_found for an unknown hash, under both media types', async () => {
      for (const headers of [{}, GRAPHQL_RESPONSE]) {
        for (const body of [
          { extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ viewer { userId } }') } } },
          { documentId: 'f'.repeat(64) },
        ]) {
          const r = await post(t, body, headers);
          expect(r.status).toBe(400);
          expect(r.body.data).toBeUndefined();
          expect(r.body.errors[0].extensions.code).toBe('persisted_document_not_found');
          expect(r.body.errors[0].message).toContain('No trusted document has the hash');
        }
      }
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
