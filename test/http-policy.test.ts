// The HTTP policy: CORS off unless configured (never with credentials), security headers on every response, a
// strict CSP for GraphiQL that lets only its own scripts (files from this origin) run, and served files that a browser cannot render.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { servedContentType } from '../src/modules/files/data-route.js';
import { ConfigError, loadConfig } from '../src/config.js';

const ORIGIN = 'https://app.example.com';

async function probe(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return res;
}

describe('CORS_ORIGINS', () => {
  it('is off by default, a list of origins, or * alone; anything else is refused at start', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://b.example:8080' }).corsOrigins).toEqual([
      'https://a.example',
      'http://b.example:8080',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    for (const bad of ['*,https://a.example', 'a.example', 'https://a.example/path', 'ftp://a.example']) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
    }
  });

  it('served content types: documents a browser would render become opaque bytes', () => {
    for (const t of [
      'text/html',
      'text/html; charset=utf-8',
      'image/svg+xml',
      'application/xhtml+xml',
      'text/xml',
      'application/javascript',
      'application/pdf',
      '',
      'nonsense',
    ]) {
      expect(servedContentType(t), t).toBe('application/octet-stream');
    }
    for (const t of ['application/zip', 'image/png', 'text/plain', 'application/gzip'])
      expect(servedContentType(t)).toBe(t);
  });
});

forEachDatabase((kind) => {
  describe('default policy', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(kind);
    });
    afterAll(() => t?.close());

    it('answers no CORS headers, for simple requests and preflights alike', async () => {
      const res = await probe(`${t.url}/api/mc-dm-categories/`, {
        headers: { 'Forum-Api-Key': SUPER_KEY, origin: 'https://evil.example' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      const pre = await probe(`${t.url}/graphql`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://evil.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'forum-api-key',
        },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      expect(pre.headers.get('access-control-allow-headers')).toBeNull();
    });

    it('sends nosniff, no-referrer and a CSP on every kind of response', async () => {
      const u = await t.user('policy');
      const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category.category_id;
      const v = (await t.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } }))
        .body.download.current_version_id;
      const form = new FormData();
      form.append('version_id', String(v));
      form.append('file', new Blob(['<html><script>alert(1)</script></html>'], { type: 'text/html' }), 'page.html');
      const up = (await (
        await fetch(`${t.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': u.key }, body: form })
      ).json()) as any;
      expect(up.file.file_id).toBeGreaterThan(0);
      const responses = {
        rest: await probe(`${t.url}/api/mc-dm-categories/`, { headers: { 'Forum-Api-Key': SUPER_KEY } }),
        restError: await probe(`${t.url}/api/mc-dm-categories/`),
        graphql: await probe(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
          body: '{"query":"{ viewer { userId } }"}',
        }),
        graphiql: await probe(`${t.url}/graphql`, { headers: { accept: 'text/html' } }),
        health: await probe(`${t.url}/healthz`),
        ready: await probe(`${t.url}/readyz`),
        notFound: await probe(`${t.url}/nowhere`),
        data: await probe(`${t.url}/api/mc-dm-files/${up.file.file_id}/data/`, { headers: { 'Forum-Api-Key': u.key } }),
      };
      for (const [name, res] of Object.entries(responses)) {
        expect(res.headers.get('x-content-type-options'), name).toBe('nosniff');
        expect(res.headers.get('referrer-policy'), name).toBe('no-referrer');
        expect(res.headers.get('content-security-policy'), name).toMatch(/default-src 'none'/);
      }
      // the HTML upload is served as opaque bytes, as an attachment, in a sandbox
      expect(responses.data.status).toBe(200);
      expect(responses.data.headers.get('content-type')).toBe('application/octet-stream');
      expect(responses.data.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(responses.data.headers.get('content-security-policy')).toContain('sandbox');
    });

    it("a request Node's parser refuses answers in the error format: 431 request_too_large for a request line over 16 KiB, 400 invalid_input for bytes that are not HTTP", async () => {
      // Found by test/fuzz.test.ts: a long query string got Node's bare "431" with no body and no code.
      const long = await fetch(new URL(`/api/mc-dm-categories/?per_page=${'9'.repeat(20_000)}`, t.url), {
        headers: { 'Forum-Api-Key': SUPER_KEY },
      });
      expect(long.status).toBe(431);
      expect(long.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await long.json()).toMatchObject({
        errors: [{ code: 'request_too_large', message: expect.stringContaining('16 KiB') }],
      });
      const raw = await new Promise<string>((resolve, reject) => {
        const url = new URL(t.url);
        const socket = net.connect(Number(url.port), url.hostname, () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
        let data = '';
        socket.on('data', (d) => {
          data += d.toString();
        });
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ errors: [{ code: 'invalid_input' }] });
      // The service still answers.
      expect(
        (await fetch(new URL('/api/mc-dm-categories/', t.url), { headers: { 'Forum-Api-Key': SUPER_KEY } })).status,
      ).toBe(200);
    });

    it('GraphiQL gets a CSP that allows scripts and workers from this origin only (served as files), no inline script', async () => {
      const res = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      const csp = res.headers.get('content-security-policy')!;
      expect(html).not.toMatch(/<script>/);
      expect(csp).toMatch(/script-src 'self'(;|$)/);
      expect(csp).toContain("worker-src 'self' blob:");
      expect(csp).not.toContain("'unsafe-eval'");
      expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      // the page is the real GraphiQL, bundled and served by this service (no external asset)
      const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
      expect(scripts.map((u) => u.replace(/\?v=[\w.-]+$/, ''))).toEqual([
        '/graphiql/graphiql.js',
        '/graphiql/start.js',
      ]);
      const bundle = await fetch(`${t.url}${scripts[0]}`);
      expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(await bundle.text()).toContain('renderYogaGraphiQL');
      // the bundle is loaded on first use: its other files come from it too, and a name it lacks is not a page
      expect((await fetch(`${t.url}/graphiql/worker-graphql.js`)).headers.get('content-type')).toMatch(
        /^text\/javascript/,
      );
      expect((await fetch(`${t.url}/graphiql/favicon.ico`)).headers.get('content-type')).toBe('image/x-icon');
      expect((await fetch(`${t.url}/graphiql/nothing.js`)).status).toBe(404);
    });
  });

  describe('CORS_ORIGINS set', () => {
    let listed: TestApp;
    let any: TestApp;
    beforeAll(async () => {
      listed = await startTestApp(kind, { corsOrigins: [ORIGIN] });
      any = await startTestApp(kind, { corsOrigins: ['*'] });
    });
    afterAll(async () => {
      await listed?.close();
      await any?.close();
    });

    it('a listed origin is allowed (preflight and request), without credentials; another origin is not', async () => {
      const pre = await probe(`${listed.url}/api/mc-dm-categories/`, {
        method: 'OPTIONS',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'forum-api-key,content-type',
        },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(pre.headers.get('access-control-allow-headers')).toContain('Forum-Api-Key');
      expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
      const res = await probe(`${listed.url}/api/mc-dm-categories/`, {
        headers: { origin: ORIGIN, 'Forum-Api-Key': SUPER_KEY },
      });
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(res.headers.get('vary')).toMatch(/origin/i);
      const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(/,\s*/);
      for (const name of ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
        expect(exposed).toContain(name);
      }
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      const other = await probe(`${listed.url}/api/mc-dm-categories/`, {
        headers: { origin: 'https://evil.example', 'Forum-Api-Key': SUPER_KEY },
      });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const g = await probe(`${listed.url}/graphql`, {
        method: 'POST',
        headers: { origin: 'https://evil.example', 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
        body: '{"query":"{ viewer { userId } }"}',
      });
      expect(g.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('* allows any origin, and never with credentials', async () => {
      const res = await probe(`${any.url}/graphql`, {
        method: 'POST',
        headers: { origin: 'https://anywhere.example', 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
        body: '{"query":"{ viewer { userId } }"}',
      });
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      const pre = await probe(`${any.url}/graphql`, {
        method: 'OPTIONS',
        headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' },
      });
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
      expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    });
  });
});
