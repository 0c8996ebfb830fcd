// Hand-written SQL for the steps several writes share (an outbox row, a download's tags, a category's count), sent
// through whichever transaction the write holds: a driver transaction (Database.transaction, the hot writes) or a
// Prisma interactive transaction (the others). Written once, as SQL: Prisma's model queries cost about a millisecond
// of CPU each in this version (their plan is compiled in WebAssembly on every call), a raw statement a fraction.
import type { Prisma } from '../generated/prisma/client.js';
import type { Session } from './database.js';

/** A transaction to send statements in: a driver session, or a Prisma transaction client. */
export type Sql = Pick<Session, 'query'> | Prisma.TransactionClient;

/** Runs one statement in `tx` and answers its rows. Parameters are cast in the text (`$1::int`). */
export function sqlRows<R = Record<string, unknown>>(tx: Sql, sql: string, params: unknown[] = []): Promise<R[]> {
  return 'query' in tx ? tx.query<R>(sql, params) : tx.$queryRawUnsafe<R[]>(sql, ...params);
}
