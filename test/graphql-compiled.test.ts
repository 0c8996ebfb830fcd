// /graphql runs queries and mutations compiled (graphql-jit) from a document's second use: the answers are those of
// the interpreting executor, word for word (data, errors, paths, locations, codes, statuses); variables it refuses are
// refused as before; the deadline still answers operation_timeout; a document graphql-jit cannot compile, and a
// subscription, stay interpreted; the cache of compiled documents is bounded; an operation answered at its deadline
// keeps its fair-share slot until its work ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  GraphQLInt,
  GraphQLNonNull,
  parse,
  type ExecutionResult,
} from 'graphql';
import { CompiledOperations, compiledExecutionPlugin } from '../src/graphql/compiled.js';
import { FairShare, fairSharePlugin } from '../src/http/fair-share.js';
import { operationLimitsPlugin } from '../src/graphql/limits.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const GRAPHQL_RESPONSE = { accept: 'application/graphql-response+json' };

/** /graphql executions so far, by mode, from /metrics. */
async function executions(t: TestApp): Promise<{ compiled: number; interpreted: number }> {
  const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
  const of = (mode: string) =>
    Number(new RegExp(`^dcs_graphql_executions_total\\{mode="${mode}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { compiled: of('compiled'), interpreted: of('interpreted') };
}

/**
 * A response with its errors (and their codes) in path order: sibling fields run concurrently, so on a database server
 * the order their errors arrive in is the order their statements finish, under either executor.
 */
function inPathOrder<T extends { errors?: { path?: readonly (string | number)[] }[]; codes?: string[] }>(r: T): T {
  if (!r.errors) return r;
  const errors = [...r.errors].sort((a, b) => (a.path ?? []).join('.').localeCompare((b.path ?? []).join('.')));
  return { ...r, errors, ...(r.codes ? { codes: [...r.codes].sort() } : {}) };
}

forEachDatabase((kind) => {
  let t: TestApp;
  let categoryId: number;
  let downloadId: number;
  let member: { userId: number; key: string };
  beforeAll(async () => {
    // Off: these tests repeat one document to watch how it is executed, which the read cache would answer.
    t = await startTestApp(kind, { readCacheMb: 0 });
    member = await t.user('member');
    categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Main' } })).body.category
      .category_id;
    await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Child', parent_category_id: categoryId } });
    downloadId = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        key: member.key,
        form: { category_id: categoryId, title: 'One' },
      })
    ).body.download.download_id;
    expect(
      (
        await t.rest('POST', '/api/mc-dm-comments/', {
          key: member.key,
          form: { download_id: downloadId, message: 'First' },
        })
      ).status,
    ).toBe(200);
    const other = await t.user('other');
    expect(
      (
        await t.rest('POST', '/api/mc-dm-comments/', {
          key: other.key,
          form: { download_id: downloadId, message: 'Second' },
        })
      ).status,
    ).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The response to the document's first run (interpreted) and to its second and third (compiled). */
  const bothWays = async (
    query: string,
    variables: Record<string, unknown> = {},
    key: string = SUPER_KEY,
    headers: Record<string, string> = {},
  ) => {
    const before = await executions(t);
    const interpreted = await t.gql(query, variables, key, headers);
    const compiled = await t.gql(query, variables, key, headers);
    const again = await t.gql(query, variables, key, headers);
    const after = await executions(t);
    return {
      interpreted,
      compiled,
      again,
      ran: { compiled: after.compiled - before.compiled, interpreted: after.interpreted - before.interpreted },
    };
  };

  it('runs a document interpreted on its first use, compiled from its second', async () => {
    const r = await bothWays('{ viewer { userId username } }');
    expect(r.ran).toEqual({ interpreted: 1, compiled: 2 });
    expect(r.compiled).toEqual(r.interpreted);
    expect(r.interpreted.data.viewer.userId).toBe(0);
  });

  it('answers the same compiled as interpreted, on representative documents', async () => {
    const node = (await t.gqlOk(`{ category(categoryId: ${categoryId}) { id } }`)).category.id as string;
    const documents: [string, Record<string, unknown>?, string?][] = [
      // lists, nested lists, enums, custom scalars, __typename
      [
        '{ categories(perPage: 10, order: TITLE, direction: DESC) { __typename nodes { categoryId parentCategoryId title downloadCount } pagination { page perPage total lastPage } } }',
      ],
      [
        `{ comments(perPage: 10, downloadId: ${downloadId}) { nodes { commentId message commentState commentDate author { userId username } } pagination { total } } }`,
      ],
      [
        `{ download(downloadId: ${downloadId}) { downloadId title downloadState createdDate category { title children { nodes { title } } } comments { nodes { message } } versions { versionId } currentVersion { versionId } owner { username } } }`,
      ],
      // aliases, fragments (named and inline), variables with defaults
      [
        `query Q($id: Int!, $per: Int = 1) { a: category(categoryId: $id) { ...C } b: category(categoryId: $id) { ... on Category { t: title } } categories(perPage: $per) { nodes { ...C } } }
        fragment C on Category { categoryId title }`,
        { id: categoryId },
      ],
      // the Node interface: node, nodes (one unknown), and type conditions
      [
        `query($id: ID!, $ids: [ID!]!) { node(id: $id) { __typename id ... on Category { categoryId title } ... on Download { downloadId } } nodes(ids: $ids) { id __typename } }`,
        { id: node, ids: [node, 'bm9wZQ=='] },
      ],
      // errors: an object not found (data with a null and a coded error), a hidden one, a permission refusal
      [`{ viewer { userId } category(categoryId: 99999) { title } download(downloadId: ${downloadId}) { title } }`],
      [`{ users(perPage: 5) { nodes { userId } } apiKeys { nodes { apiKeyId } } }`, {}, member.key],
      [`{ viewer { userId } x: download(downloadId: 99999) { title } y: category(categoryId: 99998) { title } }`],
      // a refused mutation (nothing is changed either way)
      [`mutation { deleteCategory(input: { categoryId: 99999 }) { success } }`],
      // introspection
      ['{ __type(name: "Direction") { name kind enumValues { name } } __schema { queryType { name } } }'],
    ];
    for (const [query, variables, key] of documents) {
      for (const [i, headers] of [{}, GRAPHQL_RESPONSE].entries()) {
        // a comment makes it a new document for the second media type: interpreted first again
        const r = await bothWays(`${query}\n# ${i}`, variables, key, headers);
        expect(r.interpreted.status === 200 || r.interpreted.data !== undefined, JSON.stringify(r.interpreted)).toBe(
          true,
        );
        expect(r.ran, query).toEqual({ interpreted: 1, compiled: 2 });
        expect(inPathOrder(r.compiled), query).toEqual(inPathOrder(r.interpreted));
        expect(inPathOrder(r.again), query).toEqual(inPathOrder(r.interpreted));
      }
    }
  });

  it('refuses invalid variables as before, compiled document or not', async () => {
    const query =
      'query($id: Int!, $order: CategoryOrder) { category(categoryId: $id) { title } categories(order: $order) { nodes { title } } }';
    const refusals = [{ id: 'abc' }, { id: 2 ** 40 }, {}, { id: 1, order: 'SIDEWAYS' }, { id: null }];
    const first = [];
    for (const v of refusals) first.push(await t.gql(query, v));
    await t.gql(query, { id: categoryId }); // now compiled
    const before = await executions(t);
    expect((await t.gql(query, { id: categoryId })).data.category.title).toBe('Main');
    expect((await executions(t)).compiled - before.compiled).toBe(1);
    for (const [i, v] of refusals.entries()) {
      const r = await t.gql(query, v);
      expect(r, JSON.stringify(v)).toEqual(first[i]);
      expect(r.status).toBe(first[i]!.status);
      expect(r.codes).toEqual(['invalid_input']);
    }
    expect(first[1]!.errors![0].message).toMatch(/an id is/); // the Int range hint is still added
  });

  describe('the deadline', () => {
    const q =
      '{ downloads(perPage: 100) { nodes { versions { versionId } category { title } currentVersion { versionId } } } }';
    beforeAll(async () => {
      await t.gqlOk(q);
    });
    afterAll(() => {
      t.config.graphql.timeoutMs = 10_000;
    });

    it('a compiled operation past its deadline answers 503 operation_timeout', async () => {
      const timeout = t.config.graphql.timeoutMs;
      // The embedded database runs the whole operation as microtasks: the deadline of 1 ms is found passed when it
      // settles. On a PostgreSQL server the request's path to the executor has real waits, and on a slow machine 1 ms
      // could pass before the executor started (the operation was then refused unexecuted): there its statements
      // wait behind a lock instead, until a deadline the path to the executor does not outlive.
      let unlock = async () => {};
      if (kind === 'postgres') {
        let release!: () => void;
        const released = new Promise<void>((r) => {
          release = r;
        });
        let locked!: () => void;
        const isLocked = new Promise<void>((r) => {
          locked = r;
        });
        const holding = t.app.db.session!(async (s) => {
          await s.exec('BEGIN');
          await s.exec('LOCK TABLE download IN ACCESS EXCLUSIVE MODE');
          locked();
          await released;
          await s.exec('ROLLBACK');
        });
        await isLocked;
        unlock = async () => {
          release();
          await holding;
        };
      }
      const limit = kind === 'postgres' ? 500 : 1;
      t.config.graphql.timeoutMs = limit;
      const before = await executions(t);
      let r: Awaited<ReturnType<TestApp['gql']>>;
      try {
        r = await t.gql(q, {}, SUPER_KEY, GRAPHQL_RESPONSE);
      } finally {
        t.config.graphql.timeoutMs = timeout;
        await unlock();
      }
      expect((await executions(t)).compiled - before.compiled).toBe(1);
      expect(r.status).toBe(503);
      expect(r.data).toBeUndefined();
      expect(r.errors![0].extensions).toMatchObject({ code: 'operation_timeout', params: { limit } });
      // the server is left in order: the next run answers
      expect((await t.gql(q)).status).toBe(200);
    });
  });
});

describe('the compiled operations cache', () => {
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        hello: { type: GraphQLString, resolve: () => 'world' },
        twice: {
          type: GraphQLInt,
          args: { n: { type: new GraphQLNonNull(GraphQLInt) } },
          resolve: (_, { n }) => 2 * n,
        },
      },
    }),
  });

  /** Runs `document` through the plugin, the way Yoga's execute hook would, with a stand-in interpreter. */
  const runner = (ops: CompiledOperations) => {
    let execute!: (args: unknown) => unknown;
    const interpret = async (): Promise<ExecutionResult> => ({ data: { interpreted: true } });
    compiledExecutionPlugin(ops).onExecute!({
      executeFn: interpret,
      setExecuteFn: (fn: unknown) => {
        execute = fn as typeof execute;
      },
    } as never);
    return (document: ReturnType<typeof parse>, variableValues: Record<string, unknown> = {}, operationName?: string) =>
      execute({ schema, document, variableValues, operationName, contextValue: {} }) as Promise<ExecutionResult>;
  };

  it('keeps at most its capacity of documents, the least recently used leaving first', async () => {
    const ops = new CompiledOperations(3);
    const run = runner(ops);
    const docs = Array.from({ length: 5 }, () => parse('{ hello }'));
    for (const d of docs.slice(0, 3)) await run(d);
    await run(docs[0]!); // used again: the most recent now
    for (const d of docs.slice(3)) await run(d);
    expect(ops.size).toBe(3);
    expect(ops.runs).toEqual({ interpreted: 5, compiled: 1 });
    expect(await run(docs[0]!)).toEqual({ data: { hello: 'world' } }); // kept: compiled
    expect(await run(docs[1]!)).toEqual({ data: { interpreted: true } }); // evicted: a first use again
    expect(ops.size).toBe(3);
  });

  it('a document graphql-jit cannot compile stays interpreted, the reason told once', async () => {
    const reasons: unknown[] = [];
    const ops = new CompiledOperations(10, (reason) => reasons.push(reason));
    const run = runner(ops);
    const doc = parse('{ hello @skip(if: $b) }'); // an undefined variable (validation would refuse it): graphql-jit refuses it
    for (let i = 0; i < 4; i++) expect(await run(doc)).toEqual({ data: { interpreted: true } });
    expect(reasons).toHaveLength(1);
    expect(ops.runs).toEqual({ interpreted: 4, compiled: 0 });
  });

  it('subscriptions, unknown operation names and refused variables stay with the interpreter', async () => {
    const ops = new CompiledOperations(10);
    const run = runner(ops);
    const sub = parse('subscription S { hello }');
    for (let i = 0; i < 3; i++) await run(sub);
    const two = parse('query A { hello } query B { twice(n: 2) }');
    for (let i = 0; i < 3; i++) await run(two, {}, 'C');
    expect(ops.runs).toEqual({ interpreted: 6, compiled: 0 });
    await run(two, {}, 'B');
    expect(await run(two, {}, 'B')).toEqual({ data: { twice: 4 } });
    const vars = parse('query($n: Int!) { twice(n: $n) }');
    await run(vars, { n: 1 });
    expect(await run(vars, { n: 21 })).toEqual({ data: { twice: 42 } });
    expect(await run(vars, { n: 'x' })).toEqual({ data: { interpreted: true } });
    expect(await run(vars, {})).toEqual({ data: { interpreted: true } });
  });

  it('an operation answered at its deadline keeps its fair-share slot until its work really ends', async () => {
    const share = new FairShare(1);
    let finish!: (r: ExecutionResult) => void;
    const work = new Promise<ExecutionResult>((resolve) => {
      finish = resolve;
    });
    // The plugins wrap the executor in the order the server registers them: the fair share, then the deadline.
    let execute: (args: unknown) => Promise<ExecutionResult> = () => work;
    const args = { schema, document: parse('{ hello }'), contextValue: {} };
    const hook = {
      args,
      setExecuteFn: (fn: typeof execute) => {
        execute = fn;
      },
    };
    fairSharePlugin(share).onExecute!({ ...hook, executeFn: execute } as never);
    operationLimitsPlugin({ maxCost: 100, maxDepth: 10, maxAliases: 10, maxTokens: 1000, timeoutMs: 5 }).onExecute!({
      ...hook,
      executeFn: execute,
    } as never);
    await expect(execute(args)).rejects.toMatchObject({ code: 'operation_timeout', params: { limit: 5 } });
    expect(share.inFlight).toBe(1); // answered, still working: the slot is held
    finish({ data: { hello: 'late' } });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(share.inFlight).toBe(0);
  });
});
