// GET /metrics: Prometheus text, scraped after real requests on both faces and parsed: counts and latencies by REST
// route pattern and GraphQL operation name, errors by code, upload bytes, database connections; and who may read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { loadConfig } from '../src/config.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (the lines that carry samples). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels` (0 when there is none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hits.reduce((a, s) => a + s.value, 0);
}

async function scrape(t: TestApp, key: string | null = SUPER_KEY) {
  const r = await fetch(`${t.url}/metrics`, { headers: key ? { 'Forum-Api-Key': key } : {} });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

forEachDatabase((kind) => {
  describe('METRICS=key (the default)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(kind);
    });
    afterAll(async () => {
      await t?.close();
    });

    it('needs a super-user key', async () => {
      expect((await scrape(t, null)).status).toBe(401);
      const u = await t.user('reader');
      const asUser = await scrape(t, u.key);
      expect(asUser.status).toBe(403);
      expect(JSON.parse(asUser.text).errors[0].code).toBe('do_not_have_permission');
      const ok = await scrape(t);
      expect(ok.status).toBe(200);
      expect(ok.type).toMatch(/^text\/plain; version=0\.0\.4/);
      const post = await fetch(`${t.url}/metrics`, { method: 'POST', headers: { 'Forum-Api-Key': SUPER_KEY } });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    });

    it('counts requests and latency by route pattern and operation name, errors by code, upload bytes, connections', async () => {
      const owner = await t.user('owner');
      const before = parse((await scrape(t)).text);
      const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Maps' } })).body.category.category_id;
      await t.rest('GET', '/api/mc-dm-categories/');
      await t.rest('GET', '/api/mc-dm-categories/');
      await t.rest('GET', `/api/mc-dm-categories/${c}/`);
      await t.rest('GET', '/api/mc-dm-categories/987654/'); // 404 category_not_found
      await t.rest('GET', '/api/mc-dm-categories/', { key: null }); // 401 no_api_key_in_request
      await t.rest('PATCH', '/api/mc-dm-categories/'); // 405
      await t.gqlOk('query Mine { viewer { userId } }');
      await t.gqlOk('query Mine { viewer { userId } }');
      await t.gql('{ viewer { userId } }');
      await t.gql('query Nope { category(categoryId: 987654) { title } }');
      await t.gql('query NoKey { viewer { userId } }', {}, null);
      // an upload on each face
      const d = (
        await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: c, title: 'Pack' } })
      ).body.download;
      const form = new FormData();
      form.append('version_id', String(d.current_version_id));
      form.append('file', new Blob([new Uint8Array(3000).fill(65)]), 'a.txt');
      expect(
        (
          await fetch(`${t.url}/api/mc-dm-files/`, {
            method: 'POST',
            headers: { 'Forum-Api-Key': owner.key },
            body: form,
          })
        ).status,
      ).toBe(200);
      const g = new FormData();
      g.append(
        'operations',
        JSON.stringify({
          query: `mutation Up($f: Upload!) { createFile(input: { versionId: ${d.current_version_id}, file: $f }) { file { fileId } } }`,
          variables: { f: null },
        }),
      );
      g.append('map', JSON.stringify({ 0: ['variables.f'] }));
      g.append('0', new Blob([new Uint8Array(2000).fill(66)]), 'b.txt');
      const up = (await (
        await fetch(`${t.url}/graphql`, { method: 'POST', headers: { 'Forum-Api-Key': owner.key }, body: g })
      ).json()) as any;
      expect(up.data.createFile.file.fileId).toBeGreaterThan(0);

      const scraped = await scrape(t);
      const after = parse(scraped.text);
      const delta = (name: string, labels: Record<string, string> = {}) =>
        value(after, name, labels) - value(before, name, labels);

      expect(delta('dcs_rest_requests_total', { route: '/api/mc-dm-categories/', method: 'GET', status: '200' })).toBe(
        2,
      );
      expect(delta('dcs_rest_requests_total', { route: '/api/mc-dm-categories/', method: 'POST', status: '200' })).toBe(
        1,
      );
      expect(
        delta('dcs_rest_requests_total', {
          route: '/api/mc-dm-categories/:category_id/',
          method: 'GET',
          status: '200',
        }),
      ).toBe(1);
      expect(
        delta('dcs_rest_requests_total', {
          route: '/api/mc-dm-categories/:category_id/',
          method: 'GET',
          status: '404',
        }),
      ).toBe(1);
      expect(delta('dcs_rest_requests_total', { route: '/api/mc-dm-categories/', method: 'GET', status: '401' })).toBe(
        1,
      );
      expect(
        delta('dcs_rest_requests_total', { route: '/api/mc-dm-categories/', method: 'PATCH', status: '405' }),
      ).toBe(1);
      expect(
        delta('dcs_rest_request_duration_seconds_count', {
          route: '/api/mc-dm-categories/:category_id/',
          method: 'GET',
        }),
      ).toBe(2);
      expect(
        value(after, 'dcs_rest_request_duration_seconds_sum', { route: '/api/mc-dm-categories/', method: 'GET' }),
      ).toBeGreaterThan(0);
      expect(
        delta('dcs_rest_request_duration_seconds_bucket', {
          route: '/api/mc-dm-categories/',
          method: 'GET',
          le: '+Inf',
        }),
      ).toBe(3);
      expect(scraped.text).not.toContain('987654'); // raw paths never become labels

      expect(delta('dcs_graphql_requests_total', { operation: 'Mine', status: '200' })).toBe(2);
      expect(delta('dcs_graphql_requests_total', { operation: 'anonymous' })).toBe(1);
      expect(delta('dcs_graphql_requests_total', { operation: 'Up' })).toBe(1);
      expect(delta('dcs_graphql_requests_total', { operation: 'NoKey', status: '401' })).toBe(1);
      expect(delta('dcs_graphql_requests_total', { operation: 'Nope', status: '200' })).toBe(1); // application/json: 200 with errors
      expect(delta('dcs_graphql_request_duration_seconds_count', { operation: 'Mine' })).toBe(2);

      expect(delta('dcs_errors_total', { face: 'rest', code: 'mc_dm_api_error.category_not_found' })).toBe(1);
      expect(delta('dcs_errors_total', { face: 'rest', code: 'no_api_key_in_request' })).toBe(1);
      expect(delta('dcs_errors_total', { face: 'rest', code: 'method_not_allowed' })).toBe(1);
      expect(delta('dcs_errors_total', { face: 'graphql', code: 'mc_dm_api_error.category_not_found' })).toBe(1);
      expect(delta('dcs_errors_total', { face: 'graphql', code: 'no_api_key_in_request' })).toBe(1);

      // process-wide: other test files' apps in this process do not upload meanwhile
      expect(delta('dcs_upload_bytes_total', { source: 'upload' })).toBe(5000);

      const inUse = value(after, 'dcs_db_connections', { state: 'in_use' });
      const idle = value(after, 'dcs_db_connections', { state: 'idle' });
      if (kind === 'pglite') expect({ inUse, idle }).toEqual({ inUse: 1, idle: 0 });
      else expect(inUse + idle).toBeGreaterThanOrEqual(1);
      expect(value(after, 'dcs_process_resident_memory_bytes')).toBeGreaterThan(0);
    });
  });

  describe('METRICS=open and METRICS=off', () => {
    let open: TestApp;
    let off: TestApp;
    beforeAll(async () => {
      open = await startTestApp(kind, { metrics: 'open' });
      off = await startTestApp(kind, { metrics: 'off' });
    });
    afterAll(async () => {
      await open?.close();
      await off?.close();
    });

    it('open needs no key; off has no endpoint', async () => {
      const o = await scrape(open, null);
      expect(o.status).toBe(200);
      expect(parse(o.text).some((s) => s.name === 'dcs_db_connections')).toBe(true);
      expect((await scrape(off)).status).toBe(404);
    });
  });
});

describe('METRICS', () => {
  it('is key by default; open or 1, off or 0; anything else stops the start with a message', () => {
    expect(loadConfig({}).metrics).toBe('key');
    expect(loadConfig({ METRICS: 'open' }).metrics).toBe('open');
    expect(loadConfig({ METRICS: '1' }).metrics).toBe('open');
    expect(loadConfig({ METRICS: 'off' }).metrics).toBe('off');
    expect(loadConfig({ METRICS: '0' }).metrics).toBe('off');
    expect(() => loadConfig({ METRICS: 'yes' })).toThrow(/METRICS must be one of key, open, off, got "yes"/);
  });
});
