// GRAPHQL_MAX_RESPONSE_BYTES: an operation whose result grows past the limit stops and answers 400
// operation_too_expensive with params { kind: "response_size", limit }, on /graphql (interpreted and compiled runs,
// both media types) and on REST; under the limit, answers are unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, SUPER_KEY, startTestApp, type TestApp } from './helpers/app.js';
import { loadConfig } from '../src/config.js';
import { buildSchema, execute, parse, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { countResponseBytes, RESPONSE_BUDGET, ResponseBudget, sizeOf } from '../src/graphql/response-size.js';

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

// A schema of its own, with every way a leaf is reached: read straight off its object (counted by the field that
// returned the object), computed by a resolver (counted by itself), on the root type, through lists of lists, an
// interface, fragments, aliases, @include/@skip on variables, __typename, and objects that resolve later.
describe('counting a result as it resolves', () => {
  const SDL = `
    interface Named { name: String! }
    type Item implements Named { id: Int! name: String! text: String shout: String! tags: [String!]! flag: Boolean! }
    type Other implements Named { name: String! note: String! }
    type Page { items: [Item!]! total: Int! grid: [[Item!]!]! }
    type Query {
      hello: String!
      page(n: Int!): Page!
      later(n: Int!): [Item!]!
      named: [Named!]!
      one: Item
    }
  `;
  const items = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      text: 'x'.repeat(200 + i),
      tags: ['a', `tag ${i}`],
      flag: i % 2 === 0,
    }));
  let schema: GraphQLSchema;
  beforeAll(() => {
    schema = buildSchema(SDL);
    const resolvers: Record<string, Record<string, (...a: any[]) => unknown>> = {
      Query: {
        hello: () => 'world',
        page: (_: unknown, { n }: { n: number }) => ({ items: items(n), total: n, grid: [items(2), items(3)] }),
        later: (_: unknown, { n }: { n: number }) =>
          new Promise((r) => setTimeout(() => r(items(n).map((it) => Promise.resolve(it))), 1)),
        named: () => [...items(2), { note: 'n'.repeat(50), name: 'other' }],
        one: () => items(1)[0],
      },
      Item: { shout: (it: { name: string }) => it.name.toUpperCase() },
    };
    for (const [typeName, fields] of Object.entries(resolvers)) {
      const type = schema.getType(typeName) as any;
      for (const [name, resolve] of Object.entries(fields)) type.getFields()[name].resolve = resolve;
    }
    (schema.getType('Named') as any).resolveType = (v: { note?: string }) => ('note' in v ? 'Other' : 'Item');
    countResponseBytes(schema);
  });

  // Compiled once per query, as the service does: every run of a query shares its field nodes.
  const compiledQueries = new Map<string, ReturnType<typeof compileQuery<any, any>>>();
  /** Runs `query` with a budget, on the interpreting executor and compiled by graphql-jit: both results and counts. */
  async function run(query: string, variables: Record<string, unknown> = {}, limit = 10_000_000) {
    const out: { result: ExecutionResult; used: number; over: boolean }[] = [];
    for (const compiled of [false, true]) {
      const budget = new ResponseBudget(limit, () => {});
      const context = { [RESPONSE_BUDGET]: budget };
      const document = parse(query);
      if (compiled && !compiledQueries.has(query)) compiledQueries.set(query, compileQuery<any, any>(schema, document));
      const jit = compiled ? compiledQueries.get(query) : undefined;
      if (jit && !isCompiledQuery(jit)) throw new Error('graphql-jit cannot compile the test query');
      const result = jit
        ? await jit.query(undefined, context, variables)
        : await execute({ schema, document, contextValue: context, variableValues: variables });
      out.push({ result: result as ExecutionResult, used: budget.used, over: budget.over });
    }
    return out;
  }

  /** The count is about the result's JSON size: never below it by more than a little, never far above it. */
  const near = (used: number, result: ExecutionResult) => {
    const actual = JSON.stringify(result.data).length;
    expect(used, `counted ${used} for ${actual} bytes`).toBeGreaterThanOrEqual(actual * 0.9);
    expect(used, `counted ${used} for ${actual} bytes`).toBeLessThanOrEqual(actual * 1.3 + 50);
  };

  it('counts leaves read off their objects and computed leaves, on both executors, through lists of lists', async () => {
    const q = `query($n: Int!) { hello page(n: $n) { total items { id name text shout tags flag }
      grid { name text } } }`;
    const [interpreted, compiled] = await run(q, { n: 40 });
    for (const r of [interpreted!, compiled!]) {
      expect(r.result.errors).toBeUndefined();
      near(r.used, r.result);
    }
    expect(compiled!.result.data).toEqual(interpreted!.result.data);
  });

  it('counts aliases, fragments, an interface, __typename and objects that resolve later', async () => {
    const q = `query($n: Int!) {
      a: later(n: $n) { ...F } b: later(n: $n) { t: text }
      named { __typename name ... on Other { note } ... on Item { text } }
    } fragment F on Item { id text again: text }`;
    for (const r of await run(q, { n: 30 })) {
      expect(r.result.errors).toBeUndefined();
      near(r.used, r.result);
    }
  });

  it('counts only what @include and @skip leave in, per value of their variables', async () => {
    const q = `query($n: Int!, $big: Boolean!) { page(n: $n) { items { id text @include(if: $big) ...G } } }
      fragment G on Item { name @skip(if: $big) }`;
    for (const big of [true, false, true]) {
      for (const r of await run(q, { n: 50, big })) {
        expect(r.result.errors).toBeUndefined();
        near(r.used, r.result);
        expect(JSON.stringify(r.result.data).includes('xxxx')).toBe(big);
      }
    }
  });

  it('stops counting past the limit and answers placeholders below it', async () => {
    for (const r of await run('{ page(n: 100) { items { text } } one { text } }', {}, 5_000)) {
      expect(r.over).toBe(true);
      // the list that went over, and what resolved after it, hold no text
      expect(JSON.stringify(r.result.data ?? {}).length).toBeLessThan(5_000);
    }
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
