// The self-contained API reference: /api/openapi.json is a valid OpenAPI 3.1 document generated from the route
// table, it lists every route, parameter and error code, and what it documents is what a real server answers.
// Also the pages that need no key: the landing page, the reference page's assets, the forum-page notice.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { routes } from '../rest-adapter/routes.js';
import { ERROR_CODES } from '../src/error-codes.js';
import { statusOf } from '../src/errors.js';

type Json = Record<string, any>;

/** Where `value` breaks `schema` (the subset of JSON Schema the generator writes): a list of complaints. */
function mismatches(value: unknown, schema: Json, at: string): string[] {
  if (!schema) return [];
  if (schema.allOf) return mismatches(value, { ...schema.allOf[0], ...schema, allOf: undefined }, at);
  if (schema.oneOf)
    return schema.oneOf.some((s: Json) => mismatches(value, s, at).length === 0)
      ? []
      : [`${at}: matches no alternative`];
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const actual =
    value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
  if (types.length && !types.includes(actual) && !(actual === 'integer' && types.includes('number'))) {
    return [`${at}: ${actual}, documented ${types.join('|')}`];
  }
  if (schema.enum && !schema.enum.includes(value))
    return [`${at}: ${JSON.stringify(value)} not in ${schema.enum.join(',')}`];
  if (actual === 'array' && schema.items)
    return (value as unknown[]).flatMap((v, i) => mismatches(v, schema.items, `${at}[${i}]`));
  if (actual === 'object' && schema.properties) {
    const out: string[] = [];
    for (const k of Object.keys(value as Json)) if (!(k in schema.properties)) out.push(`${at}.${k}: not documented`);
    for (const k of schema.required ?? [])
      if (!(k in (value as Json))) out.push(`${at}.${k}: documented as always present, missing`);
    for (const [k, v] of Object.entries(value as Json)) out.push(...mismatches(v, schema.properties[k], `${at}.${k}`));
    return out;
  }
  return [];
}

/** Every error code the source raises: `new ApiError('<code>'`, `code: '<code>'` and the not-found kinds. */
function codesInSource(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== 'generated') walk(p);
      else if (e.name.endsWith('.ts')) files.push(p);
    }
  };
  walk('src');
  walk('rest-adapter');
  const codes = new Set<string>();
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(/ApiError\(\s*['"`]([a-z_.]+)['"`]/g)) codes.add(m[1]!);
    for (const m of text.matchAll(/code: '([a-z_.]+)'/g)) codes.add(m[1]!);
    for (const m of text.matchAll(/notFound\('([a-z_]+)'/g)) codes.add(`mc_dm_api_error.${m[1]}_not_found`);
  }
  return [...codes].filter((c) => !c.endsWith('.'));
}

describe('docs/concepts.md', () => {
  const text = fs.readFileSync('docs/concepts.md', 'utf8');
  it('lists every error code with its status and meaning', () => {
    for (const [code, meaning] of Object.entries(ERROR_CODES))
      expect(text).toContain(`| ${statusOf(code)} | \`${code}\` | ${meaning} |`);
  });
  it('names every permission, scope, key type and built-in group with its default grants', async () => {
    const { PERMISSIONS, SCOPES, BUILT_IN_GROUPS } = await import('../src/permissions/names.js');
    for (const p of PERMISSIONS) expect(text).toContain(`\`${p}\``);
    for (const sc of SCOPES) expect(text).toContain(`| \`${sc}\` |`);
    for (const k of ['GUEST', 'USER', 'SUPER']) expect(text).toContain(`| \`${k}\` |`);
    expect(text).toContain(`| \`guest\` | ${BUILT_IN_GROUPS.guest.map((p) => `\`${p}\``).join(', ')} |`);
  });
  it('is linked from the README, and neither cites documents outside the repository', () => {
    const readme = fs.readFileSync('README.md', 'utf8');
    expect(readme).toContain('(docs/concepts.md)');
    for (const doc of [readme, text]) expect(doc).not.toMatch(/contract §|downloads-catalogue-api\.md|the spec's/);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let doc: Json;
  beforeAll(async () => {
    t = await startTestApp(kind);
    const r = await fetch(`${t.url}/api/openapi.json`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    doc = await r.json();
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('/api/openapi.json', () => {
    it('is a valid OpenAPI 3.1 document, served without a key', async () => {
      expect(doc.openapi).toBe('3.1.0');
      const result = await new Validator().validate(doc as never);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
    });

    it('documents every route of the table, with its path parameters, the key header and the success envelope', () => {
      // each method and path once in the table (a route file joined twice would shadow nothing and hide nothing)
      const keys = routes.map((r) => `${r.method} ${r.path}`);
      expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
      for (const r of routes) {
        const op = doc.paths[r.path.replace(/:([a-z_]+)/g, '{$1}')]?.[r.method.toLowerCase()];
        expect(op, `${r.method} ${r.path}`).toBeDefined();
        const pathParams = [...r.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]);
        expect(op.parameters.filter((p: Json) => p.in === 'path').map((p: Json) => p.name)).toEqual(pathParams);
        expect(op.security[0]).toHaveProperty('ForumApiKey');
        const ok = op.responses['200'].content['application/json'].schema;
        expect(Object.keys(ok.properties)).toContain(r.envelope);
        expect(op.description.length, `${r.method} ${r.path} has the schema's description`).toBeGreaterThan(20);
        // the summary says what the route does, in words, not the path again
        expect(op.summary, `${r.method} ${r.path}`).toMatch(/^[A-Z][a-z]+( [a-z'-]+)+$/);
        expect(op.summary).not.toContain('/api/');
      }
      const summaries = (path: string) =>
        Object.fromEntries(Object.entries(doc.paths[path]).map(([m, op]: [string, any]) => [m, op.summary]));
      expect(summaries('/api/mc-dm-downloads/{download_id}/')).toEqual({
        get: 'Get a download',
        put: 'Update a download',
        delete: 'Delete a download',
      });
      expect(summaries('/api/mc-dm-categories/').get).toBe('List categories');
      expect(doc.paths['/api/mc-dm-files/{file_id}/data/'].get).toBeDefined();
      expect(doc.components.securitySchemes.ForumApiKey).toEqual(
        expect.objectContaining({ type: 'apiKey', in: 'header', name: 'Forum-Api-Key' }),
      );
      expect(doc.components.securitySchemes.ForumApiUser).toEqual(
        expect.objectContaining({ type: 'apiKey', in: 'header', name: 'Forum-Api-User' }),
      );
    });

    it('names parameters as the adapter reads them: snake_case variables and input fields, name[] lists, with=full', () => {
      const names = (method: string, p: string) => {
        const op = doc.paths[p][method];
        const query = op.parameters.filter((x: Json) => x.in === 'query').map((x: Json) => x.name);
        const body = Object.keys(op.requestBody?.content['application/x-www-form-urlencoded'].schema.properties ?? {});
        return [...query, ...body];
      };
      expect(names('get', '/api/mc-dm-downloads/')).toEqual(
        expect.arrayContaining([
          'category_id',
          'prefix_id',
          'download_state',
          'since',
          'page',
          'per_page',
          'order',
          'direction',
          'with',
        ]),
      );
      expect(names('post', '/api/mc-dm-downloads/')).toEqual(
        expect.arrayContaining([
          'category_id',
          'title',
          'tag_line',
          'description',
          'prefix_id',
          'tags[]',
          'version_string',
        ]),
      );
      expect(names('put', '/api/mc-dm-categories/{category_id}/')).toEqual(
        expect.arrayContaining([
          'require_approval',
          'enable_versioning',
          'allow_multi_file',
          'max_files_per_version',
          'allowed_file_types',
        ]),
      );
      expect(names('delete', '/api/mc-dm-downloads/{download_id}/')).toEqual(
        expect.arrayContaining(['hard', 'reason']),
      );
      expect(names('post', '/api/mc-dm-files/')).toEqual(
        expect.arrayContaining([
          'version_id',
          'file',
          'external_url',
          'link_only',
          'display_label',
          'is_primary',
          'display_order',
        ]),
      );
      const create =
        doc.paths['/api/mc-dm-downloads/'].post.requestBody.content['application/x-www-form-urlencoded'].schema;
      expect(create.required).toEqual(['category_id', 'title']);
      const order = doc.paths['/api/mc-dm-downloads/'].get.parameters.find((p: Json) => p.name === 'order');
      expect(order.schema.enum).toEqual([
        'created_date',
        'last_update',
        'download_count',
        'view_count',
        'title',
        'relevance',
        'rating',
      ]);
      expect(
        doc.paths['/api/mc-dm-files/'].post.requestBody.content['multipart/form-data'].schema.properties.file,
      ).toMatchObject({ type: 'string', format: 'binary' });
      // the verbose fields are documented, marked as with=full only
      const download =
        doc.paths['/api/mc-dm-downloads/{download_id}/'].get.responses['200'].content['application/json'].schema
          .properties.download;
      for (const f of [
        'can_view',
        'can_edit',
        'can_delete',
        'can_download',
        'is_visible',
        'is_password_protected',
        'tags',
        'Category',
        'CurrentVersion',
      ]) {
        expect(download.properties[f]?.description, f).toMatch(/with=full/);
        expect(download.required).not.toContain(f);
      }
      expect(download.required).toEqual(
        expect.arrayContaining(['download_id', 'view_url', 'download_state', 'current_version_id']),
      );
    });

    it('lists every error code the source raises, each with its status', () => {
      const documented = doc.components.schemas.Errors.properties.errors.items.properties.code.enum as string[];
      const missing = codesInSource().filter((c) => !documented.includes(c));
      expect(missing, 'codes raised but not in src/error-codes.ts').toEqual([]);
      for (const code of documented) {
        const status = statusOf(code);
        expect(doc.components.responses[`Error${status}`].description, code).toContain(`\`${code}\``);
        expect(doc.info.description).toContain(`| ${status} | \`${code}\` |`);
      }
      expect(Object.keys(ERROR_CODES)).toEqual(documented);
      expect(doc.paths['/api/mc-dm-categories/'].post.responses['403']).toEqual({
        $ref: '#/components/responses/Error403',
      });
    });
  });

  describe('what the document says is what the server answers', () => {
    const ids: Record<string, number> = {};
    beforeAll(async () => {
      const c = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Maps' } });
      ids.category_id = c.body.category.category_id;
      const d = await t.rest('POST', '/api/mc-dm-downloads/', {
        form: { category_id: ids.category_id, title: 'Pack', tags: ['a'] },
        headers: { 'Forum-Api-User': String((await t.user('owner')).userId) },
      });
      ids.download_id = d.body.download.download_id;
      ids.version_id = d.body.download.current_version_id;
      const form = new FormData();
      form.append('version_id', String(ids.version_id));
      form.append('file', new Blob(['hello, world']), 'hello.txt');
      const f = (await (
        await fetch(`${t.url}/api/mc-dm-files/`, {
          method: 'POST',
          headers: { 'Forum-Api-Key': await t.key('SUPER') },
          body: form,
        })
      ).json()) as Json;
      ids.file_id = f.file.file_id;
      const cm = await t.rest('POST', '/api/mc-dm-comments/', {
        form: { download_id: ids.download_id, message: 'hi' },
        headers: { 'Forum-Api-User': String(d.body.download.user_id) },
      });
      ids.comment_id = cm.body.comment.comment_id;
      // A dependency, so that the version's resolved dependencies have a row.
      const lib = await t.rest('POST', '/api/mc-dm-downloads/', {
        form: { category_id: ids.category_id, title: 'Lib' },
        headers: { 'Forum-Api-User': String(d.body.download.user_id) },
      });
      const dep = await t.rest('PUT', `/api/mc-dm-versions/${ids.version_id}/`, {
        json: { dependencies: [{ download_id: lib.body.download.download_id, version_range: '*' }] },
      });
      expect(dep.status, JSON.stringify(dep.body)).toBe(200);
      const reviewer = await t.user('api_reviewer');
      const rv = await t.rest('POST', '/api/mc-dm-reviews/', {
        key: reviewer.key,
        form: { download_id: ids.download_id, rating: 4, message: 'ok' },
      });
      ids.review_id = rv.body.review.review_id;
      const hook = await t.rest('POST', '/api/mc-dm-webhooks/', {
        form: { url: 'https://93.184.215.14/hook', events: ['*'] },
      });
      ids.webhook_id = hook.body.webhook.webhook_id;
    });

    it('a generated example request for every GET route answers the documented envelope, plain and with=full', async () => {
      let checked = 0;
      for (const [p, ops] of Object.entries(doc.paths as Record<string, Json>)) {
        const op = ops.get;
        if (!op || p.endsWith('/data/')) continue;
        for (const full of [false, true]) {
          const url = new URL(
            p.replace(/\{([a-z_]+)\}/g, (_m, name) => String(ids[name])),
            t.url,
          );
          // required query parameters (none for a super-user key today) and one documented filter, from the seed
          for (const q of op.parameters.filter((x: Json) => x.in === 'query')) {
            if (q.required || (q.name in ids && q.name !== 'category_id'))
              url.searchParams.set(q.name, String(ids[q.name]));
          }
          if (full) url.searchParams.set('with', 'full');
          const r = await fetch(url, { headers: { 'Forum-Api-Key': 'dm_test_super_key_with_every_scope_000000000' } });
          const body = await r.json();
          expect(r.status, `${url}: ${JSON.stringify(body)}`).toBe(200);
          const schema = op.responses['200'].content['application/json'].schema;
          // Every documented key, but those the document says are left out when null (a search's extras) may be absent.
          const optional = (k: string) => /Left out when null/.test(schema.properties[k].description ?? '');
          expect(Object.keys(body).sort(), url.href).toEqual(
            Object.keys(schema.properties)
              .filter((k) => k in body || !optional(k))
              .sort(),
          );
          const envelopeKey = Object.keys(schema.properties).find((k) => k !== 'pagination')!;
          const value = body[envelopeKey];
          expect(Array.isArray(value) ? value.length : 1, `${url} returns a row`).toBeGreaterThan(0);
          expect(mismatches(body, schema, 'body'), url.href).toEqual([]);
          if (full) {
            // with=full: every documented field of the row is there (embedded objects only when set)
            const item = Array.isArray(value) ? value[0] : value;
            const itemSchema = Array.isArray(value)
              ? schema.properties[envelopeKey].items
              : schema.properties[envelopeKey];
            const always = Object.entries(itemSchema.properties)
              .filter(([, s]: [string, any]) => !/Left out when null/.test(s.description ?? ''))
              .map(([k]) => k);
            expect(Object.keys(item), url.href).toEqual(expect.arrayContaining(always));
          }
          checked += 1;
        }
      }
      expect(checked).toBe(routes.filter((r) => r.method === 'GET').length * 2);
    });

    it('documented error statuses are the ones answered', async () => {
      const r = await t.rest('GET', '/api/mc-dm-downloads/', { key: null });
      expect(r.status).toBe(401);
      expect(doc.components.responses.Error401.description).toContain(r.body.errors[0].code);
      const missing = await t.rest('GET', `/api/mc-dm-downloads/999999/`);
      expect(doc.components.responses[`Error${missing.status}`].description).toContain(missing.body.errors[0].code);
    });
  });

  describe('pages that need no key', () => {
    it('the landing page links GraphiQL, the API reference, the OpenAPI document and health', async () => {
      const r = await fetch(`${t.url}/`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await r.text();
      for (const href of ['/graphql', '/api/docs', '/api/openapi.json', '/healthz', '/readyz'])
        expect(html).toContain(`href="${href}"`);
      expect(html).toMatch(/href="\/site\.css\?v=[\w-]+"/); // a versioned address, kept by browsers for a year
      expect(html).toContain('Forum-Api-Key');
      const css = await fetch(`${t.url}/site.css`);
      expect(css.status).toBe(200);
      expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    });

    it('every script and style of the pages is a file served here (works offline, passes the CSP)', async () => {
      for (const page of ['/', '/api/docs', '/graphql']) {
        const res = await fetch(`${t.url}${page}`, { headers: { accept: 'text/html' } });
        expect(res.status, page).toBe(200);
        const html = await res.text();
        const csp = res.headers.get('content-security-policy')!;
        expect(csp, page).toMatch(/script-src 'self'/);
        expect(csp, page).not.toContain("'unsafe-eval'");
        expect(csp, page).not.toMatch(/script-src[^;]*'unsafe-inline'/);
        expect(html, page).not.toMatch(/<script>/); // no inline script
        const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((u) => !u.startsWith('#'));
        for (const ref of refs) {
          expect(ref, `${page} links only to this service`).toMatch(/^\//);
          if (!/\.(js|css|ico)(\?v=[\w.-]+)?$/.test(ref)) continue;
          const a = await fetch(`${t.url}${ref}`);
          expect(a.status, ref).toBe(200);
          expect(a.headers.get('content-type'), ref).toMatch(/^(text\/javascript|text\/css|image\/x-icon)/);
          expect(a.headers.get('x-content-type-options')).toBe('nosniff');
        }
      }
    });

    it('/api/docs (and /api/docs/) is the reference page; it is not an API route', async () => {
      for (const p of ['/api/docs', '/api/docs/']) {
        const r = await fetch(`${t.url}${p}`);
        expect(r.status, p).toBe(200);
        expect(await r.text()).toContain('/api/docs/swagger-ui-bundle.js');
      }
      const post = await fetch(`${t.url}/api/openapi.json`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      expect(((await post.json()) as Json).errors[0].code).toBe('method_not_allowed');
    });

    it("a view_url answers a 404 page that says it is the forum's page (BASE_URL)", async () => {
      const d = await t.rest('GET', '/api/mc-dm-downloads/', { query: { with: 'full' } });
      const urls = [d.body.downloads[0].view_url, d.body.downloads[0].Category.view_url];
      for (const u of urls) {
        const r = await fetch(`${t.url}${new URL(u).pathname}`);
        expect(r.status, u).toBe(404);
        expect(r.headers.get('content-type')).toMatch(/^text\/html/);
        const html = await r.text();
        expect(html).toContain('page of the forum');
        expect(html).toContain('BASE_URL');
      }
      const nowhere = await fetch(`${t.url}/nowhere`);
      expect(nowhere.status).toBe(404);
    });
  });
});
