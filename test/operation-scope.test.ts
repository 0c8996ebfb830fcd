// How a statement learns its operation (src/db/operation-scope.ts, src/db/operation-bound.ts): the context's database
// names it on the statement or the connection; the context's Prisma client runs each call inside a scope that is on
// only while such a call is in flight. The PostgreSQL server's side (a statement cancelled at the deadline, either way)
// is test/deadline-statements.test.ts.
import { describe, expect, it } from 'vitest';
import type { PrismaClient } from '../src/generated/prisma/client.js';
import {
  OPERATION,
  OPERATION_SLOT,
  bindStatementsToOperations,
  boundTo,
  inOperation,
  operationOf,
  unbound,
  type Carrier,
  type Operation,
} from '../src/db/operation-scope.js';
import { operationDatabase, operationPrisma } from '../src/db/operation-bound.js';
import type { Database, Session, StatementOptions } from '../src/db/database.js';

bindStatementsToOperations();
const tick = () => new Promise((r) => setImmediate(r));
const op = (client = 'key'): Operation => ({ signal: new AbortController().signal, client });

describe('the scope', () => {
  it('holds the operation through the awaits of a call, and is off once the call has settled', async () => {
    const a = op();
    const seen: (Operation | undefined)[] = [];
    await inOperation(a, async () => {
      seen.push(operationOf());
      await tick();
      seen.push(operationOf());
      await Promise.resolve();
      seen.push(unbound(() => operationOf()));
    });
    expect(seen).toEqual([a, a, undefined]);
    expect(operationOf()).toBeUndefined();
    // On again for the next call, and two calls at once keep their own.
    const b = op('other');
    const later = async () => {
      await tick();
      return operationOf();
    };
    const both = await Promise.all([inOperation(a, later), inOperation(b, later)]);
    expect(both).toEqual([a, b]);
    expect(operationOf()).toBeUndefined();
  });

  it('a call that throws or rejects turns the scope off too', async () => {
    expect(() =>
      inOperation(op(), () => {
        throw new Error('x');
      }),
    ).toThrow('x');
    await expect(inOperation(op(), async () => Promise.reject(new Error('y')))).rejects.toThrow('y');
    expect(operationOf()).toBeUndefined();
  });

  it('a statement names its operation on its query config, else on its connection, before the scope', async () => {
    const a = op();
    const b = op();
    const c = op();
    const config: Carrier = { [OPERATION]: a };
    const connection: Carrier = { [OPERATION]: b };
    await inOperation(c, async () => {
      expect(operationOf(config, connection)).toBe(a);
      expect(operationOf({}, connection)).toBe(b);
      expect(operationOf('SELECT 1', {})).toBe(c);
    });
    expect(operationOf({}, {})).toBeUndefined();
  });

  it('boundTo puts the operation in the context slot and runs without the scope', () => {
    const slot: Carrier = {};
    const signal = new AbortController().signal;
    const inside = boundTo(signal, () => operationOf(), 'key-a', { [OPERATION_SLOT]: slot });
    expect(inside).toBeUndefined(); // no scope: the context's database and Prisma read the slot
    expect(slot[OPERATION]).toEqual({ signal, client: 'key-a' });
    // Without a context: the scope.
    expect(boundTo(signal, () => operationOf()?.client, 'key-b')).toBe('key-b');
  });
});

describe("the context's database", () => {
  function fakeDb() {
    const sent: { sql: string; opts?: StatementOptions; operation?: Operation }[] = [];
    const session: Session = { exec: async () => {}, query: async () => [] };
    const db: Pick<Database, 'query' | 'session' | 'transaction' | 'kind'> = {
      kind: 'postgres',
      query: async (sql, _params, opts) => {
        sent.push({ sql, opts });
        return [];
      },
      session: async (fn, operation) => {
        sent.push({ sql: 'session', operation });
        return fn(session);
      },
      transaction: async (fn, operation) => {
        sent.push({ sql: 'transaction', operation });
        return fn(session);
      },
    };
    return { db, sent };
  }

  it('names the operation in its slot on every statement, session and transaction; none before it is set', async () => {
    const { db, sent } = fakeDb();
    const slot: Carrier = {};
    const view = operationDatabase(db, slot);
    expect(view.kind).toBe('postgres');
    await view.query('SELECT 0', [], { prepared: false });
    const a = op();
    slot[OPERATION] = a;
    await view.query('SELECT 1', [], { prepared: false });
    await view.session(async () => {});
    await view.transaction(async () => {});
    expect(sent).toEqual([
      { sql: 'SELECT 0', opts: { prepared: false } },
      { sql: 'SELECT 1', opts: { prepared: false, operation: a } },
      { sql: 'session', operation: a },
      { sql: 'transaction', operation: a },
    ]);
  });
});

describe("the context's Prisma client", () => {
  /** A stand-in with Prisma's shape: model methods return promises that run their query when first awaited. */
  function fakePrisma() {
    const ran: (Operation | undefined)[] = [];
    const lazy = () => {
      let started: Promise<Operation | undefined> | undefined;
      const query = async () => {
        await tick();
        ran.push(operationOf());
        return operationOf();
      };
      const run = () => {
        started ??= query();
        return started;
      };
      return {
        // biome-ignore lint/suspicious/noThenProperty: Prisma's promises are thenables that run when first awaited
        then: (a?: (v: unknown) => unknown, b?: (e: unknown) => unknown) => run().then(a, b),
        catch: (b?: (e: unknown) => unknown) => run().catch(b),
        finally: (f?: () => void) => run().finally(f),
        [Symbol.toStringTag]: 'PrismaPromise',
      };
    };
    const client = {
      _internal: { kept: true },
      download: { findMany: () => lazy(), name: 'Download' },
      $transaction: async (fn: () => Promise<unknown>) => {
        await tick();
        ran.push(operationOf());
        return fn();
      },
      $on: () => 'on',
    };
    return { prisma: client as unknown as PrismaClient, ran };
  }

  it("runs each call inside the slot's operation when it is first awaited", async () => {
    const { prisma, ran } = fakePrisma();
    const slot: Carrier = {};
    const bound = operationPrisma(prisma, slot) as unknown as ReturnType<typeof fakePrisma>['prisma'] & {
      download: { findMany(): PromiseLike<Operation | undefined>; name: string };
      $transaction(fn: () => Promise<unknown>): Promise<unknown>;
      _internal: unknown;
      $on(): string;
    };
    expect(await bound.download.findMany()).toBeUndefined(); // no operation yet: no scope
    const a = op();
    slot[OPERATION] = a;
    const pending = bound.download.findMany();
    await tick(); // not awaited yet: nothing runs
    expect(ran).toEqual([undefined]);
    expect(await pending).toBe(a);
    await bound.download.findMany().finally(() => {});
    await bound.$transaction(async () => {});
    expect(ran).toEqual([undefined, a, a, a]);
    // What is not a call passes through as it is.
    expect(bound.download.name).toBe('Download');
    expect(bound._internal).toEqual({ kept: true });
    expect(bound.$on()).toBe('on');
    expect(operationOf()).toBeUndefined(); // the scope is off again
  });
});
