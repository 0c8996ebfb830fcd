// The embedded database runs the hand-written reads as named prepared statements (src/db/lite-statements.ts):
// each text is parsed once and reused, answers exactly what PGlite's query() answers, survives errors, schema
// changes and transactions as query() does, and keeps a bounded number of statements prepared.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, type Database } from '../src/db/client.js';
import { LiteStatements } from '../src/db/lite-statements.js';
import { pgliteTemplate } from './helpers/lite-pool.js';

let lite: PGlite;
let st: LiteStatements;
beforeAll(async () => {
  // From the build's ready-made database: a fresh one (initdb) costs about three times the CPU.
  lite = new PGlite({ loadDataDir: pgliteTemplate() });
  await lite.waitReady;
});
afterAll(async () => {
  await lite.close();
});
beforeEach(async () => {
  await lite.exec(
    "DEALLOCATE ALL; DROP TABLE IF EXISTS t; CREATE TABLE t (id int PRIMARY KEY, name text); INSERT INTO t VALUES (1, 'one'), (2, 'two')",
  );
  st = new LiteStatements(lite, 3);
});

const ours = async () =>
  (
    await lite.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements ORDER BY prepare_time',
    )
  ).rows;

describe('named prepared statements on the embedded database', () => {
  it('prepares a statement once and reuses it', async () => {
    const sql = 'SELECT name FROM t WHERE id = $1';
    expect(await st.query(sql, [1])).toEqual([{ name: 'one' }]);
    expect(await st.query(sql, [2])).toEqual([{ name: 'two' }]);
    expect(await st.query(sql, [3])).toEqual([]);
    expect(st.prepares).toBe(1);
    const prepared = await ours();
    expect(prepared).toHaveLength(1);
    expect(prepared[0]).toMatchObject({ statement: sql, name: expect.stringMatching(/^dcs_[0-9a-f]{16}$/) });
  });

  it('answers what query() answers: the same parsers for the columns and serializers for the parameters', async () => {
    const sql = `SELECT $1::int AS i, $2::bigint AS b, $3::numeric AS n, $4::timestamp AS ts, $5::timestamptz AS tz, $6::json AS j,
      $7::jsonb AS jb, $8::bool AS t, $9::text AS nul, $10::int[] AS a, $11::bytea AS bytes, 'x' AS x, 2.5::float8 AS f`;
    const params = [
      7,
      2n ** 40n,
      '1.50',
      new Date('2026-01-02T03:04:05.678Z'),
      new Date('2026-01-02T03:04:05.678Z'),
      { a: [1, 'é'] },
      { b: null },
      true,
      null,
      [1, 2, 3],
      new Uint8Array([0, 255]),
    ];
    const expected = (await lite.query(sql, params)).rows;
    expect(await st.query(sql, params)).toEqual(expected);
    expect(await st.query(sql, params)).toEqual(expected);
    expect(expected[0]).toMatchObject({ i: 7, b: 2 ** 40, j: { a: [1, 'é'] }, t: true, nul: null, a: [1, 2, 3] });
  });

  it('a statement failing in the middle leaves the connection usable and the statement prepared', async () => {
    const sql = 'SELECT 10 / $1::int AS n';
    expect(await st.query(sql, [2])).toEqual([{ n: 5 }]);
    await expect(st.query(sql, [0])).rejects.toMatchObject({ code: '22012', query: sql, params: [0] }); // division by zero, in Execute
    await expect(st.query(sql, ['nope'])).rejects.toMatchObject({ code: '22P02' }); // a bad parameter, in Bind
    expect(await st.query(sql, [5])).toEqual([{ n: 2 }]);
    expect(st.prepares).toBe(1);
    // A statement that does not parse is not kept, and nothing else is disturbed.
    await expect(st.query('SELEC 1', [])).rejects.toMatchObject({ code: '42601' });
    expect(st.size).toBe(1);
    expect(await st.query('SELECT count(*)::int AS n FROM t', [])).toEqual([{ n: 2 }]);
    expect(lite.isInTransaction()).toBe(false);
  });

  it('runs inside the transaction block the connection is in, and the statement outlives its rollback', async () => {
    const sql = 'SELECT count(*)::int AS n FROM t';
    await lite.exec("BEGIN; INSERT INTO t VALUES (3, 'three')");
    expect(await st.query(sql)).toEqual([{ n: 3 }]); // prepared inside the block, sees its uncommitted row
    expect(lite.isInTransaction()).toBe(true); // a Sync inside a block does not commit it
    await lite.exec('ROLLBACK');
    expect(await st.query(sql)).toEqual([{ n: 2 }]);
    expect(st.prepares).toBe(1);
    // An error inside a block aborts the block, as any statement's would; after the rollback all is well.
    await lite.exec('BEGIN');
    await expect(st.query('SELECT 1 / $1::int AS n', [0])).rejects.toMatchObject({ code: '22012' });
    await expect(st.query(sql)).rejects.toMatchObject({ code: '25P02' });
    await lite.exec('ROLLBACK');
    expect(await st.query(sql)).toEqual([{ n: 2 }]);
  });

  it("waits for an open PGlite transaction (Prisma's) and then runs outside it, as query() does", async () => {
    const order: string[] = [];
    let read: Promise<unknown> | undefined;
    await lite.transaction(async (tx) => {
      await tx.query("INSERT INTO t VALUES (3, 'three')");
      read = st.query<{ n: number }>('SELECT count(*)::int AS n FROM t').then((r) => {
        order.push('read');
        return r;
      });
      await new Promise((r) => setTimeout(r, 20));
      order.push('commit');
    });
    expect(await read).toEqual([{ n: 3 }]);
    expect(order).toEqual(['commit', 'read']);
  });

  it('prepares again when a schema change alters the result (cached plan must not change result type)', async () => {
    const sql = 'SELECT * FROM t WHERE id = $1';
    expect(await st.query(sql, [1])).toEqual([{ id: 1, name: 'one' }]);
    await lite.exec('ALTER TABLE t ADD COLUMN extra int DEFAULT 9');
    expect(await st.query(sql, [1])).toEqual([{ id: 1, name: 'one', extra: 9 }]);
    expect(st.prepares).toBe(2);
    // Also when the statement was deallocated under it.
    await lite.exec('DEALLOCATE ALL');
    expect(await st.query(sql, [2])).toEqual([{ id: 2, name: 'two', extra: 9 }]);
    expect(st.prepares).toBe(3);
    // Inside a transaction block the error stands (the block is aborted); the next call after it prepares anew.
    await lite.exec('ALTER TABLE t DROP COLUMN extra');
    await lite.exec('BEGIN');
    await expect(st.query(sql, [1])).rejects.toMatchObject({ code: '0A000' });
    await lite.exec('ROLLBACK');
    expect(await st.query(sql, [1])).toEqual([{ id: 1, name: 'one' }]);
    expect(st.prepares).toBe(4);
    expect(await ours()).toHaveLength(1);
  });

  it('plans a statement for its values every time when asked (customPlan), parsing it once, the setting as it was', async () => {
    const sql = 'SELECT name FROM t WHERE id = $1';
    const plans = async () =>
      (
        await lite.query<{ g: number; c: number }>(
          'SELECT generic_plans::int AS g, custom_plans::int AS c FROM pg_prepared_statements WHERE statement = $1',
          [sql],
        )
      ).rows[0];
    const mode = async () => (await lite.query<{ m: string }>("SELECT current_setting('plan_cache_mode') AS m")).rows;
    for (let i = 0; i < 8; i++) expect(await st.query(sql, [i % 2 ? 1 : 2], { customPlan: true })).toHaveLength(1);
    expect(await plans()).toEqual({ g: 0, c: 8 });
    expect(st.prepares).toBe(3); // the statement, and the two around it
    expect(await mode()).toEqual([{ m: 'auto' }]);
    // Without it, PostgreSQL comes to the generic plan after five custom ones.
    for (let i = 0; i < 8; i++) await st.query(sql, [1]);
    expect((await plans())!.g).toBeGreaterThan(0);
    // A failing statement leaves the setting as it was; inside a transaction block too, and the block goes on.
    await expect(st.query('SELECT 10 / $1::int AS n', [0], { customPlan: true })).rejects.toMatchObject({
      code: '22012',
    });
    expect(await mode()).toEqual([{ m: 'auto' }]);
    await lite.exec('BEGIN');
    expect(await st.query('SELECT 10 / $1::int AS n', [5], { customPlan: true })).toEqual([{ n: 2 }]);
    expect(await mode()).toEqual([{ m: 'auto' }]);
    expect(lite.isInTransaction()).toBe(true);
    await lite.exec('COMMIT');
    // Deallocated under it, the statements around it are prepared again as well.
    await lite.exec('DEALLOCATE ALL');
    expect(await st.query(sql, [2], { customPlan: true })).toEqual([{ name: 'two' }]);
    expect(await mode()).toEqual([{ m: 'auto' }]);
  });

  it('keeps at most its limit of statements, closing the least recently used', async () => {
    const q = (n: number) => `SELECT ${n} AS n`;
    for (const n of [1, 2, 3]) await st.query(q(n));
    await st.query(q(1)); // 1 is now the most recently used, 2 the least
    await st.query(q(4));
    expect(st.size).toBe(3);
    expect((await ours()).map((p) => p.statement).sort()).toEqual([q(1), q(3), q(4)]);
    expect(st.prepares).toBe(4);
    expect(await st.query(q(2))).toEqual([{ n: 2 }]);
    expect(st.prepares).toBe(5);
  });
});

describe("other clients' statements (results(): Prisma's, through the adapter)", () => {
  it('runs a text unprepared the first time, prepared from the second on, answering what query() answers', async () => {
    const opts = { rowMode: 'array' as const, parsers: { 23: (v: string) => `int:${v}` } };
    const sql = 'SELECT id, name FROM t WHERE id >= $1 ORDER BY id';
    const direct = await lite.query(sql, [1], opts);
    expect(direct.rows).toEqual([
      ['int:1', 'one'],
      ['int:2', 'two'],
    ]);
    let unprepared = 0;
    const run = () =>
      st.results(sql, [1], opts, false, () => {
        unprepared++;
        return lite.query(sql, [1], opts);
      });
    const answers = [await run(), await run(), await run()];
    expect(unprepared).toBe(1);
    expect(st.prepares).toBe(1);
    expect((await ours()).map((p) => p.statement)).toEqual([sql]);
    for (const a of answers) {
      expect(a.rows).toEqual(direct.rows);
      expect(a.fields).toEqual(direct.fields);
      expect(a.affectedRows).toBe(direct.affectedRows);
      expect(a.command).toBe(direct.command);
      expect(a.rowCount).toBe(direct.rowCount);
    }
    // Objects, PGlite's own parsers, without options.
    await st.results('SELECT name FROM t WHERE id = $1', [2], {}, false, () =>
      lite.query('SELECT name FROM t WHERE id = $1', [2]),
    );
    expect(
      (
        await st.results('SELECT name FROM t WHERE id = $1', [2], {}, false, () =>
          Promise.reject(new Error('prepared expected')),
        )
      ).rows,
    ).toEqual([{ name: 'two' }]);
    // Objects with options' parsers: theirs for their types (not for a null), PGlite's for the others.
    const withOwn = { parsers: { 25: (v: string) => `text:${v}` } };
    const mixed = 'SELECT id, name, NULL::text AS none, $1::jsonb AS j FROM t WHERE id = $2';
    const expected = (await lite.query(mixed, [{ k: 1 }, 1], withOwn)).rows;
    expect(expected).toEqual([{ id: 1, name: 'text:one', none: null, j: { k: 1 } }]);
    for (let i = 0; i < 2; i++) {
      const answer = await st.results(mixed, [{ k: 1 }, 1], withOwn, false, () =>
        lite.query(mixed, [{ k: 1 }, 1], withOwn),
      );
      expect(answer.rows).toEqual(expected);
    }
  });

  it('counts the rows a write changed as query() does, and reports errors with their SQLSTATE', async () => {
    const twice = async (sql: string, params: unknown[]) => {
      await st.results(sql, params, {}, false, () => lite.query(sql, params));
      return st.results(sql, params, {}, false, () => Promise.reject(new Error('prepared expected')));
    };
    expect((await twice('UPDATE t SET name = $1 WHERE id <= $2', ['x', 2])).affectedRows).toBe(2);
    expect((await twice('DELETE FROM t WHERE id > $1', [99])).affectedRows).toBe(0);
    const insert = await twice('INSERT INTO t VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id', [3, 'three']);
    expect(insert).toMatchObject({ rows: [], affectedRows: 0 }); // the first run inserted it
    expect((await lite.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 3 }]);
    const dup = 'INSERT INTO t VALUES ($1, $2)';
    await expect(st.results(dup, [1, 'again'], {}, false, () => lite.query(dup, [1, 'again']))).rejects.toMatchObject({
      code: '23505',
    });
    await expect(
      st.results(dup, [1, 'again'], {}, false, () => Promise.reject(new Error('prepared expected'))),
    ).rejects.toMatchObject({ code: '23505' });
    expect(
      (await st.results(dup, [4, 'four'], {}, false, () => Promise.reject(new Error('prepared expected'))))
        .affectedRows,
    ).toBe(1);
  });
});

describe("Prisma's statements on the embedded database", () => {
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({ memory: true, loadDataDir: pgliteTemplate() });
  });
  afterAll(async () => {
    await db.close();
  });
  const preparedLike = (pattern: string) =>
    db.session((s) =>
      s.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements WHERE statement LIKE $1', [pattern]),
    );

  it('are prepared once a text comes again, with the same answers and the same errors (a unique name)', async () => {
    const before = db.statements();
    for (let i = 0; i < 3; i++)
      expect(await db.prisma.group.findMany({ where: { name: 'nobody' }, select: { id: true } })).toEqual([]);
    expect(db.statements() - before).toBe(3);
    expect(await preparedLike('%FROM "public"."user_group"%')).toHaveLength(1);
    const made = await db.prisma.group.create({ data: { name: 'prepared_a' } });
    expect(made).toMatchObject({ name: 'prepared_a', title: '', isBuiltIn: false });
    for (let i = 0; i < 2; i++)
      // What the adapter makes of a unique violation either way (unprepared, then prepared): its SQLSTATE kept.
      await expect(db.prisma.group.create({ data: { name: 'prepared_a' } })).rejects.toMatchObject({
        name: 'DriverAdapterError',
        cause: { code: '23505' },
      });
    expect(await db.prisma.group.count({ where: { name: 'prepared_a' } })).toBe(1);
  });

  it("run in Prisma's transactions, which commit or roll back what they ran", async () => {
    const create = (tx: typeof db.prisma, name: string) => tx.group.create({ data: { name }, select: { name: true } });
    await db.prisma.$transaction(async (tx) => {
      for (const name of ['tx_1', 'tx_2', 'tx_3']) await create(tx as typeof db.prisma, name);
    });
    await expect(
      db.prisma.$transaction(async (tx) => {
        for (const name of ['tx_4', 'tx_5', 'tx_6']) await create(tx as typeof db.prisma, name);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    const names = (
      await db.prisma.group.findMany({ where: { name: { startsWith: 'tx_' } }, orderBy: { name: 'asc' } })
    ).map((g) => g.name);
    expect(names).toEqual(['tx_1', 'tx_2', 'tx_3']);
    expect((await preparedLike('INSERT INTO "public"."user_group"%')).length).toBeGreaterThan(0);
  });
});

describe("the embedded database's query()", () => {
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({ memory: true, loadDataDir: pgliteTemplate() });
  });
  afterAll(async () => {
    await db.close();
  });
  afterEach(async () => {
    await db.session((s) => s.exec('DROP TABLE IF EXISTS u'));
  });

  it('goes through the prepared statements and counts each statement', async () => {
    const sql = 'SELECT $1::int + 1 AS n';
    const before = db.statements();
    expect(await db.query(sql, [1])).toEqual([{ n: 2 }]);
    expect(await db.query(sql, [41])).toEqual([{ n: 42 }]);
    expect(db.statements() - before).toBe(2);
    const prepared = await db.session((s) =>
      s.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements'),
    );
    expect(prepared.filter((p) => p.statement === sql)).toHaveLength(1);
  });

  it('waits for a Prisma transaction, then sees what it committed', async () => {
    await db.session((s) => s.exec('CREATE TABLE u (id int)'));
    let read: Promise<unknown> | undefined;
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO u VALUES (1)');
      read = db.query('SELECT count(*)::int AS n FROM u');
      await new Promise((r) => setTimeout(r, 20));
      await tx.$executeRawUnsafe('INSERT INTO u VALUES (2)');
    });
    expect(await read).toEqual([{ n: 2 }]);
  });
});
