// REST documents run compiled (graphql-jit): every route's document compiles, resolver errors keep the codes the
// envelope reads, a document that cannot be compiled falls back to the interpreting executor, and the deadline is
// kept by racing the result (graphql-jit takes no abort signal).
import { describe, expect, it } from 'vitest';
import { GraphQLObjectType, GraphQLSchema, GraphQLString, parse } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { schema } from '../src/modules/index.js';
import { routes } from '../rest-adapter/routes.js';
import { routeOperation } from '../rest-adapter/execute.js';
import { ApiError, toErrorItem } from '../src/errors.js';
import { beforeDeadline, deadline } from '../src/graphql/limits.js';

const tiny = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: { type: GraphQLString, resolve: () => 'world' },
      refused: {
        type: GraphQLString,
        resolve: () => {
          throw new ApiError('do_not_have_permission', 'No.', { what: 'x' });
        },
      },
      broken: {
        type: GraphQLString,
        resolve: () => {
          throw new Error('bug');
        },
      },
    },
  }),
});
const never = new AbortController().signal;

describe('compiled REST documents', () => {
  it('every route document compiles with graphql-jit (none falls back)', () => {
    const failed = routes
      .filter((r) => !isCompiledQuery(compileQuery(schema, r.document as never)))
      .map((r) => `${r.method} ${r.path}`);
    expect(failed).toEqual([]);
  });

  it('runs the compiled query; resolver errors keep their code, params and path', async () => {
    const fallbacks: unknown[] = [];
    const run = routeOperation(tiny, parse('{ hello refused broken }'), (r) => fallbacks.push(r));
    const result = await run({}, {}, never);
    expect(fallbacks).toEqual([]);
    expect(result.data).toEqual({ hello: 'world', refused: null, broken: null });
    const [refused, broken] = result.errors!;
    expect(toErrorItem(refused)).toEqual({ code: 'do_not_have_permission', message: 'No.', params: { what: 'x' } });
    expect(refused!.path).toEqual(['refused']);
    expect(toErrorItem(broken).code).toBe('server_error');
    expect((broken!.originalError as Error).message).toBe('bug');
    // A refusal is an answer and carries no stack trace (none collected, none formatted); a fault keeps its own.
    expect(refused!.stack).toBe('GraphQLError: No.');
    expect((broken!.originalError as Error).stack).toMatch(/\n\s+at /);
    expect(new Error('after').stack).toMatch(/\n\s+at /); // the limit is put back
  });

  it('a document graphql-jit refuses runs on the interpreting executor, said once', async () => {
    const fallbacks: unknown[] = [];
    const run = routeOperation(tiny, parse('query A { hello } query B { hello }'), (r) => fallbacks.push(r));
    // The interpreting executor refuses it too, as it did before documents were compiled.
    await expect(run({}, {}, never)).rejects.toThrow(/operation/i);
    await expect(run({}, {}, never)).rejects.toThrow(/operation/i);
    expect(fallbacks).toHaveLength(1);
    expect(String(fallbacks[0])).toMatch(/operation/i);
  });
});

describe('beforeDeadline', () => {
  it('answers the result when it comes first', async () => {
    const limit = deadline(1000);
    await expect(beforeDeadline(Promise.resolve(42), limit)).resolves.toBe(42);
    limit.clear();
  });

  it('answers operation_timeout when the deadline fires first; the work ends in the background', async () => {
    const limit = deadline(5);
    let finish!: (v: number) => void;
    const work = new Promise<number>((r) => {
      finish = r;
    });
    await expect(beforeDeadline(work, limit)).rejects.toMatchObject({
      code: 'operation_timeout',
      params: { limit: 5 },
    });
    finish(1);
    limit.clear();
  });

  it('answers operation_timeout for work that settled after the deadline passed, before the timer had its turn', async () => {
    const limit = deadline(2);
    const started = performance.now();
    while (performance.now() - started < 5) {
      /* the event loop is held: the timer cannot fire */
    }
    await expect(beforeDeadline(Promise.resolve(1), limit)).rejects.toMatchObject({ code: 'operation_timeout' });
    limit.clear();
  });
});
