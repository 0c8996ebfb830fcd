// Prisma's query plans are kept by text and by shape (src/db/prisma-plans.ts): a call whose query was compiled before
// runs its kept plan, with the same answers and errors, on both databases; a call of a shape seen before runs the
// template's plan with its values, which is the plan its own text compiles to; a kept plan is handed out as a copy; at
// most the limit is kept; a failure to compile, or a plan that is not plain data, is not kept; values are never put
// into SQL text, and a shape whose first call disagrees with its template is dropped.
import { QueryCompiler } from '@prisma/client/runtime/query_compiler_bg.postgresql.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { keeping, planChecks, planStats } from '../src/db/prisma-plans.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

describe('the compiler Prisma runs', () => {
  it('keeps its plans (a Prisma upgrade that changed the compiler would turn this off: this test says so)', () => {
    expect(Object.hasOwn(QueryCompiler.prototype, 'keepsPlans')).toBe(true);
  });
});

describe('keeping', () => {
  const compiler = (log: string[]) =>
    keeping(function (this: object, query: string) {
      log.push(query);
      if (query === 'bad') throw new Error('does not compile');
      if (query === 'odd') return { at: new Date(0) }; // not plain data: cannot be copied, so never kept
      return { query, nodes: [{ args: [1, 2] }], map: new Map([['k', { v: 1 }]]) };
    }, 2);

  it('compiles a text once per compiler, and hands out copies', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const a = {};
    const b = {};
    const first = compile.call(a, 'q') as any;
    first.nodes[0].args.push(3); // what an executor might do to its plan
    const second = compile.call(a, 'q') as any;
    expect(second).toEqual({ query: 'q', nodes: [{ args: [1, 2] }], map: new Map([['k', { v: 1 }]]) });
    expect(second).not.toBe(compile.call(a, 'q'));
    compile.call(b, 'q'); // another compiler (another database) compiles for itself
    expect(log).toEqual(['q', 'q']);
  });

  it('keeps at most its limit, dropping the least recently used', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    for (const q of ['one', 'two', 'one', 'three', 'one', 'two']) compile.call(c, q);
    // 'two' was the least recently used when 'three' came: dropped, compiled again at the end.
    expect(log).toEqual(['one', 'two', 'three', 'two']);
  });

  it('a plan holding anything but plain data (objects, arrays, Maps, primitives) is not kept', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    expect(compile.call(c, 'odd')).toEqual({ at: new Date(0) });
    expect(compile.call(c, 'odd')).toEqual({ at: new Date(0) });
    expect(log).toEqual(['odd', 'odd']);
  });

  it('a text that fails to compile is not kept: it fails each time', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    expect(() => compile.call(c, 'bad')).toThrow('does not compile');
    expect(() => compile.call(c, 'bad')).toThrow('does not compile');
    expect(log).toEqual(['bad', 'bad']);
  });
});

describe('keeping by shape', () => {
  // A compiler of JSON queries, as Prisma's takes them, answering a statement with the query's values in its
  // parameters (as Prisma's does; `name` as a LIKE pattern); for `inline`, with the name in the SQL text; for
  // `lower`, with the name lowercased.
  const compiler = (log: string[]) =>
    keeping(function (this: object, text: string) {
      log.push(text);
      const q = JSON.parse(text);
      const { id, name } = q.query.arguments.where;
      const limit = q.query.arguments.take ?? null;
      if (q.action === 'inline') return { type: 'templateSql', fragments: [{ chunk: `SELECT '${name}'` }], args: [] };
      if (q.action === 'lower') return { type: 'templateSql', fragments: [], args: [String(name).toLowerCase()] };
      return {
        type: 'templateSql',
        fragments: [{ chunk: 'SELECT WHERE id = ' }, { type: 'parameter' }, { chunk: ' AND name LIKE ' }],
        args: [String(id), `%${name}%`],
        limit,
        map: new Map([['id', { value: id }]]),
      };
    });
  const query = (action: string, id: unknown, name: unknown, take?: number) =>
    JSON.stringify({
      modelName: 'M',
      action,
      query: {
        arguments: { where: { id, name }, ...(take === undefined ? {} : { take }) },
        selection: { $scalars: true },
      },
    });
  const answer = (id: number, name: string, limit: number | null = null) => ({
    type: 'templateSql',
    fragments: [{ chunk: 'SELECT WHERE id = ' }, { type: 'parameter' }, { chunk: ' AND name LIKE ' }],
    args: [String(id), `%${name}%`],
    limit,
    map: new Map([['id', { value: id }]]),
  });

  it('compiles a shape once (its template, and the first call to check it), then fills in each call', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    const before = { ...planStats };
    const values: [number, string][] = [
      [1, 'a'],
      [-2_147_483_648, 'b%_\\'],
      [2_147_483_647, 'é"\'\u{1F600}'],
      [7, ''],
      [8, '\uE000 1 \uE001'],
    ];
    for (const [id, name] of values) expect(compile.call(c, query('find', id, name))).toEqual(answer(id, name));
    expect(log).toHaveLength(2);
    expect(log[0]).not.toContain('"a"'); // the template, with markers for the values
    expect(log[1]).toBe(query('find', 1, 'a'));
    expect(planStats.fromShape - before.fromShape).toBe(values.length - 1);
  });

  it('keeps take, skip and numbers beyond the Int range as written: other values are other shapes', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    expect(compile.call(c, query('find', 1, 'a', 5))).toEqual(answer(1, 'a', 5));
    expect(compile.call(c, query('find', 2, 'b', 6))).toEqual(answer(2, 'b', 6));
    expect(log).toHaveLength(4);
    expect(compile.call(c, query('find', 2 ** 31, 'c'))).toEqual(answer(2 ** 31, 'c'));
    // The number stays in the template as written, beside the string's marker.
    expect(log[4]).toContain('"id":2147483648');
    expect(log[4]).toContain('\uE000');
  });

  it('never fills values into SQL text: such a shape compiles each call', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    const before = { ...planStats };
    const names = ['a', "b'; DROP TABLE m; --", 'c'];
    for (const name of names) {
      expect(compile.call(c, query('inline', 1, name))).toEqual({
        type: 'templateSql',
        fragments: [{ chunk: `SELECT '${name}'` }],
        args: [],
      });
    }
    expect(planStats.fromShape - before.fromShape).toBe(0);
    for (const name of names) expect(log).toContain(query('inline', 1, name));
  });

  it('drops a shape whose first call disagrees with its template (a value changed on its way in)', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    const before = { ...planStats };
    for (const name of ['ABC', 'DEF', 'Ghi'])
      expect(compile.call(c, query('lower', 1, name))).toEqual({
        type: 'templateSql',
        fragments: [],
        args: [name.toLowerCase()],
      });
    expect(planStats.fromShape - before.fromShape).toBe(0);
  });

  it('puts in dates as the client writes them; a date written otherwise is part of the shape', () => {
    const log: string[] = [];
    const compile = keeping(function (this: object, text: string) {
      log.push(text);
      const at = JSON.parse(text).query.arguments.where.at;
      return { type: 'templateSql', fragments: [{ chunk: 'SELECT WHERE at > ' }], args: [at.value] };
    });
    const query = (value: string) =>
      JSON.stringify({ action: 'findMany', query: { arguments: { where: { at: { $type: 'DateTime', value } } } } });
    const c = {};
    const before = { ...planStats };
    for (const value of ['2026-11-28T17:48:33.453Z', '1901-01-01T00:00:00.001Z', '0001-01-01T00:00:00.000Z'])
      expect(compile.call(c, query(value))).toEqual({
        type: 'templateSql',
        fragments: [{ chunk: 'SELECT WHERE at > ' }],
        args: [value],
      });
    expect(log).toHaveLength(2);
    expect(planStats.fromShape - before.fromShape).toBe(2);
    expect((compile.call(c, query('2026-11-28T19:48:33+02:00')) as { args: string[] }).args).toEqual([
      '2026-11-28T19:48:33+02:00',
    ]);
    expect(log.at(-1)).toBe(query('2026-11-28T19:48:33+02:00'));
  });

  it('checked on every call, a disagreement throws (what the suite can turn on to hold the shapes to their texts)', () => {
    const log: string[] = [];
    const compile = compiler(log);
    const c = {};
    compile.call(c, query('lower', 1, 'abc')); // lowercase already: the first call agrees
    planChecks.everyCall = true;
    try {
      expect(() => compile.call(c, query('lower', 1, 'XYZ'))).toThrow(/differs from its own/);
      expect(compile.call(c, query('find', 3, 'q'))).toEqual(answer(3, 'q'));
    } finally {
      planChecks.everyCall = false;
    }
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a repeated call runs its kept plan with the same answer; other values run the plan of their shape', async () => {
    const prisma = t.app.db.prisma;
    const query = (name: string) => prisma.group.findMany({ where: { name }, select: { id: true, name: true } });
    const before = { ...planStats };
    const first = await query('moderator');
    const second = await query('moderator');
    expect(second).toEqual(first);
    expect(first).toHaveLength(1);
    // The shape's template, and the first call's own text (to check the template against).
    expect(planStats.compiled - before.compiled).toBe(2);
    expect(planStats.reused - before.reused).toBe(1);
    expect(await query('registered')).toEqual([{ id: expect.any(Number), name: 'registered' }]);
    expect(planStats.compiled - before.compiled).toBe(2);
    expect(planStats.fromShape - before.fromShape).toBe(1);
  });

  it('a kept write runs again as written, and fails again as it failed (a unique name)', async () => {
    const prisma = t.app.db.prisma;
    const create = () => prisma.group.create({ data: { name: 'plans-test' }, select: { name: true } });
    expect(await create()).toEqual({ name: 'plans-test' });
    const before = { ...planStats };
    const failure = async () => {
      const err = (await create().catch((e: unknown) => e)) as { name: string; code?: string; message: string };
      return { name: err.name, code: err.code, message: err.message };
    };
    const first = await failure();
    expect(first.message).toMatch(/unique constraint/i);
    expect(await failure()).toEqual(first);
    expect(planStats.reused - before.reused).toBe(2);
    const del = () => prisma.group.deleteMany({ where: { name: 'plans-test' } });
    expect(await del()).toEqual({ count: 1 });
    expect(await del()).toEqual({ count: 0 });
  });
  it('a call of a shape seen before runs the plan its own text compiles to, for any values (checked on each call)', async () => {
    const prisma = t.app.db.prisma;
    // Strings of any characters PostgreSQL stores (not NUL), whole numbers across the Int range, equal or not.
    const text = fc.string({ unit: 'binary', maxLength: 12 }).map((s) => s.replaceAll('\u0000', ''));
    const id = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    const date = fc.date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true });
    const calls = [
      (s: string) => prisma.group.findMany({ where: { name: s }, select: { id: true } }),
      (s: string, n: number) =>
        prisma.download.findMany({
          where: { title: { contains: s }, categoryId: n, state: 'visible' },
          take: 3,
          orderBy: { id: 'desc' },
          select: { id: true },
        }),
      (s: string, n: number) =>
        prisma.download.findMany({
          where: { title: { startsWith: s, mode: 'insensitive' }, id: { in: [n, n === 0 ? 1 : 0] } },
          select: { id: true, title: true, category: { select: { title: true } } },
        }),
      (s: string, n: number) =>
        prisma.download.updateMany({
          where: { id: n < 0 ? n : -n - 1 },
          data: { title: s, viewCount: { increment: 1 } },
        }),
      (s: string) =>
        prisma.group.upsert({
          where: { name: `plans-${s}` },
          create: { name: `plans-${s}`, title: s },
          update: { title: s },
          select: { name: true, title: true },
        }),
      (_: string, n: number, d: Date) =>
        prisma.download.updateMany({
          where: { id: n < 0 ? n : -n - 1, lastUpdate: { lt: d } },
          data: { lastUpdate: d, deletedAt: new Date(d.getTime() + 1) },
        }),
      (_: string, _n: number, d: Date) =>
        prisma.download.findMany({ where: { lastUpdate: { gte: d }, createdDate: { lte: d } }, select: { id: true } }),
      (s: string, n: number) =>
        prisma.comment.findFirst({ where: { downloadId: n, message: { endsWith: s } }, select: { id: true } }),
    ];
    planChecks.everyCall = true;
    try {
      for (const call of calls) {
        await fc.assert(
          fc.asyncProperty(text, id, date, async (s, n, d) => {
            await call(s, n, d);
          }),
          { numRuns: 25 },
        );
      }
      // The same name on both sides of an upsert, and different ones: each as Prisma compiles it.
      await prisma.group.upsert({
        where: { name: 'plans-same' },
        create: { name: 'plans-same' },
        update: {},
        select: { name: true },
      });
      await prisma.group.upsert({
        where: { name: 'plans-other' },
        create: { name: 'plans-else' },
        update: {},
        select: { name: true },
      });
    } finally {
      planChecks.everyCall = false;
      await prisma.group.deleteMany({ where: { name: { startsWith: 'plans-' } } });
    }
  });

  it('a number beyond an Int column is refused as before, after its shape is kept', async () => {
    const prisma = t.app.db.prisma;
    const read = (id: number) => prisma.group.findMany({ where: { id }, select: { id: true } });
    await read(1);
    await read(2);
    const before = { ...planStats };
    await read(3);
    expect(planStats.fromShape - before.fromShape).toBe(1);
    // Beyond the Int range the number is written into the query as it was, and PostgreSQL refuses it.
    const compiled = planStats.compiled;
    const err = (await read(2 ** 31).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/out of range/i);
    expect(planStats.compiled - compiled).toBe(1);
  });
});
