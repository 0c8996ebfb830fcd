// The database and the Prisma client as an operation's context holds them: what they send is bound to the operation
// the context runs (set in its slot by boundTo, src/db/operation-scope.ts), so that its deadline cancels it. Before the operation
// starts (the key's lookup, the rate limit) and outside any, they send unbound, as the shared ones do.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Database, StatementOptions } from './database.js';
import { inOperation, operationIn, statementsBound, type Carrier, type Operation } from './operation-scope.js';

/** `db`, its statements carrying the operation in `slot` (read when each is sent). */
export function operationDatabase<
  D extends Partial<Pick<Database, 'query' | 'readShared' | 'session' | 'transaction'>>,
>(db: D, slot: Carrier): D {
  if (!statementsBound()) return db; // the embedded database: nothing to bind
  const view = Object.create(db) as D & Pick<Database, 'query' | 'readShared' | 'session' | 'transaction'>;
  const shared = db as unknown as Database;
  view.query = <R>(sql: string, params?: unknown[], opts?: StatementOptions) => {
    const operation = operationIn(slot);
    return shared.query<R>(sql, params, operation ? { ...opts, operation } : opts);
  };
  if (shared.readShared)
    view.readShared = <R extends { k: number }>(sql: string, key: number, params?: unknown[]) => {
      const operation = operationIn(slot);
      return shared.readShared<R>(sql, key, params, operation ? { operation } : undefined);
    };
  if (shared.session) view.session = (fn, operation) => shared.session(fn, operation ?? operationIn(slot));
  if (shared.transaction) view.transaction = (fn, operation) => shared.transaction(fn, operation ?? operationIn(slot));
  return view;
}

type Settling = PromiseLike<unknown> & {
  catch?: (onRejected?: (reason: unknown) => unknown) => Promise<unknown>;
  finally?: (onFinally?: () => void) => Promise<unknown>;
};

/**
 * A Prisma promise runs its query when it is first awaited (then, catch or finally): that is done inside the
 * operation's scope, so that the statements it sends are bound to it. The object stays Prisma's own (an array
 * `$transaction` still takes it).
 */
function runsInOperation<P>(promise: P, operation: Operation): P {
  const p = promise as P & Settling;
  if (p === null || typeof p !== 'object' || typeof p.then !== 'function') return promise;
  let started: Promise<unknown> | undefined;
  const then = p.then.bind(p);
  const start = () => (started ??= inOperation(operation, () => Promise.resolve(then((v) => v))));
  // biome-ignore lint/suspicious/noThenProperty: it stays the thenable Prisma made, run in the operation's scope
  p.then = ((onFulfilled, onRejected) => start().then(onFulfilled, onRejected)) as typeof p.then;
  p.catch = (onRejected) => start().catch(onRejected);
  p.finally = (onFinally) => start().finally(onFinally);
  return promise;
}

/** Client methods that send statements at once (not lazily, as a model's do). */
const EAGER = new Set(['$transaction', '$queryRaw', '$queryRawUnsafe', '$executeRaw', '$executeRawUnsafe']);

/**
 * `prisma`, each call of it (a model's method, a transaction, a raw statement) run in the scope of the operation in
 * `slot`, when there is one. The models' objects are made once per context, on first use.
 */
export function operationPrisma(prisma: PrismaClient, slot: Carrier): PrismaClient {
  if (!statementsBound()) return prisma;
  const models = new Map<PropertyKey, unknown>();
  const model = (delegate: object) =>
    new Proxy(delegate, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const operation = operationIn(slot);
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          return operation ? runsInOperation(result, operation) : result;
        };
      },
    });
  return new Proxy(prisma, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof prop !== 'string' || prop.startsWith('_')) return value;
      if (typeof value === 'function') {
        if (!EAGER.has(prop)) return value.bind(target);
        return (...args: unknown[]) => {
          const operation = operationIn(slot);
          const call = () => (value as (...a: unknown[]) => unknown).apply(target, args);
          return operation ? runsInOperation(inOperation(operation, call), operation) : call();
        };
      }
      if (value === null || typeof value !== 'object' || prop.startsWith('$')) return value;
      let m = models.get(prop);
      if (!m) {
        m = model(value);
        models.set(prop, m);
      }
      return m;
    },
  });
}
