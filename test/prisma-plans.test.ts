// Prisma's query plans are kept by text (src/db/prisma-plans.ts): a call whose query was compiled before runs its kept
// plan, with the same answers and errors, on both databases; different values compile anew; a kept plan is handed
// out as a copy; at most the limit is kept; a failure to compile, or a plan that is not plain data, is not kept.
import { QueryCompiler } from '@prisma/client/runtime/query_compiler_bg.postgresql.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keeping, planStats } from '../src/db/prisma-plans.js';
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

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a repeated call runs its kept plan with the same answer; other values compile anew', async () => {
    const prisma = t.app.db.prisma;
    const query = (name: string) => prisma.group.findMany({ where: { name }, select: { id: true, name: true } });
    const before = { ...planStats };
    const first = await query('moderator');
    const second = await query('moderator');
    expect(second).toEqual(first);
    expect(first).toHaveLength(1);
    expect(planStats.compiled - before.compiled).toBe(1);
    expect(planStats.reused - before.reused).toBe(1);
    expect(await query('registered')).toEqual([{ id: expect.any(Number), name: 'registered' }]);
    expect(planStats.compiled - before.compiled).toBe(2);
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
});
