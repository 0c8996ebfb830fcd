// GRAPHQL_MAX_RESPONSE_BYTES: an operation whose result grows past the limit stops and answers 400
// operation_too_expensive with params { kind: "response_size", limit }, on /graphql (interpreted and compiled runs,
// both media types) and on REST; under the limit, answers are unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, SUPER_KEY, startTestApp, type TestApp } from './helpers/app.js';
import { loadConfig } from '../src/config.js';
import { sizeOf } from '../src/graphql/response-size.js';

const DEFAULTS = loadConfig({}).graphql;
const LIMIT = 100_000;
const TEXT = 30_000; // each download's description: four of them pass the limit, three do not
const GRAPHQL_RESPONSE = { accept: 'application/graphql-response+json' };

/** /graphql executions so far, by mode, from /metrics. */
async function executions(t: TestApp): Promise<{ compiled: number; interpreted: number }> {
  const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
  const of = (mode: string) =>
    Number(new RegExp(`^dcs_graphql_executions_total\\{mode="${mode}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { compiled: of('compiled'), interpreted: of('interpreted') };
}

describe('configuration', () => {
  it('defaults to 16 MiB and reads GRAPHQL_MAX_RESPONSE_BYTES', () => {
    expect(DEFAULTS.maxResponseBytes).toBe(16 * 1024 * 1024);
    expect(loadConfig({ GRAPHQL_MAX_RESPONSE_BYTES: '65536' }).graphql.maxResponseBytes).toBe(65536);
    expect(() => loadConfig({ GRAPHQL_MAX_RESPONSE_BYTES: 'lots' })).toThrow(/GRAPHQL_MAX_RESPONSE_BYTES/);
  });

  it('counts values about as JSON sizes them', () => {
    expect(sizeOf('abc')).toBe(JSON.stringify('abc').length);
    expect(sizeOf(['a', 'bb'])).toBeGreaterThanOrEqual(JSON.stringify(['a', 'bb']).length);
    expect(sizeOf(null)).toBe(4);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let categoryId: number;
  beforeAll(async () => {
    // The read cache off: every request here runs its operation.
    t = await startTestApp(kind, { readCacheMb: 0, graphql: { ...DEFAULTS, maxResponseBytes: LIMIT } });
    const owner = await t.user('owner');
    const { createCategory } = await t.gqlOk(
      'mutation { createCategory(input: { title: "Big texts" }) { category { categoryId } } }',
    );
    categoryId = createCategory.category.categoryId;
    for (let i = 0; i < 4; i++) {
      await t.gqlOk(
        'mutation($input: CreateDownloadInput!) { createDownload(input: $input) { download { downloadId } } }',
        {
          input: {
            categoryId,
            title: `Big ${i}`,
            tagLine: 't',
            description: String(i).repeat(TEXT),
            versionString: '1.0',
          },
        },
        owner.key,
      );
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  const refused = (r: { status: number; data?: unknown; errors?: any[] }) => {
    expect(r.status, JSON.stringify(r.errors)?.slice(0, 500)).toBe(400);
    expect(r.data).toBeUndefined();
    expect(r.errors).toHaveLength(1);
    expect(r.errors![0].extensions).toMatchObject({
      code: 'operation_too_expensive',
      params: { kind: 'response_size', limit: LIMIT },
    });
    expect(r.errors![0].message).toContain(`limit of ${LIMIT}`);
  };

  it('refuses a result past the limit, interpreted and compiled, under both media types', async () => {
    const q = `{ downloads(perPage: 100, categoryId: ${categoryId}) { nodes { title description } } }`;
    for (const headers of [{}, GRAPHQL_RESPONSE]) {
      const before = await executions(t);
      for (let run = 0; run < 3; run++) refused(await t.gql(q, {}, undefined, headers));
      const after = await executions(t);
      expect(after.compiled - before.compiled + after.interpreted - before.interpreted).toBe(3);
    }
    // the same fields on fewer rows pass, and answer every byte
    const ok = await t.gql(`{ downloads(perPage: 3, categoryId: ${categoryId}) { nodes { description } } }`);
    expect(ok.status, JSON.stringify(ok.errors)).toBe(200);
    expect(ok.data.downloads.nodes.map((n: any) => n.description.length)).toEqual([TEXT, TEXT, TEXT]);
  });

  it('counts every alias: 30 copies of a small page are refused', async () => {
    const small = `downloads(perPage: 1, categoryId: ${categoryId}) { nodes { description } }`;
    const one = await t.gql(`{ ${small} }`);
    expect(one.status).toBe(200);
    refused(await t.gql(`{ ${Array.from({ length: 30 }, (_, i) => `a${i}: ${small}`).join(' ')} }`));
  });

  it('refuses on REST with the same envelope; smaller pages pass', async () => {
    const r = await t.rest('GET', '/api/mc-dm-downloads/', { query: { category_id: categoryId, per_page: 100 } });
    expect(r.status).toBe(400);
    expect(r.body.errors).toHaveLength(1);
    expect(r.body.errors[0]).toMatchObject({
      code: 'operation_too_expensive',
      params: { kind: 'response_size', limit: LIMIT },
    });
    const ok = await t.rest('GET', '/api/mc-dm-downloads/', { query: { category_id: categoryId, per_page: 2 } });
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
  });

  it('keeps serving after refusals', async () => {
    const r = await t.gql('{ viewer { userId } }');
    expect(r.status).toBe(200);
  });
});
