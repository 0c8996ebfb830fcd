// Named prepared statements on the embedded database. PGlite's query() sends every statement as an unnamed one
// (Parse, Describe, Bind, Describe, Execute, Sync: six calls into WebAssembly), so PostgreSQL parses, analyses and
// plans the same hand-written read again on every request. Here each statement text is parsed once under a name and
// its parameter and result types remembered; a request is then one Bind/Execute/Sync message. The rows come back
// exactly as query() returns them (same type parsers, same serializers for the parameters).
import { protocol, types, type PGlite, type messages as wire } from '@electric-sql/pglite';
import { statementName } from './statement-names.js';

const { serialize } = protocol;

interface Prepared {
  name: string;
  /** The parameters' type oids as PostgreSQL inferred them: they pick the serializer of each value. */
  paramTypes: number[];
  /** The result columns, from the statement's description: Bind/Execute of a named statement sends none. */
  fields: { name: string; dataTypeID: number }[];
}

/** How many statements stay prepared at most: the least recently used one is closed to make room. */
export const PREPARED_LIMIT = 256;

/**
 * SQLSTATEs after which a prepared statement is worth preparing again: its result type changed under it (a migration
 * altered a table it reads: "cached plan must not change result type"), or it no longer exists (someone ran
 * DEALLOCATE ALL or DISCARD ALL on the one connection).
 */
const STALE = new Set(['0A000', '26000']);

export class LiteStatements {
  readonly #lite: PGlite;
  readonly #limit: number;
  /** Statement text → its prepared form, least recently used first (a Map keeps insertion order). */
  readonly #prepared = new Map<string, Prepared>();
  /** Parse messages sent so far: for tests that check a statement is prepared once. */
  prepares = 0;

  constructor(lite: PGlite, limit = PREPARED_LIMIT) {
    this.#lite = lite;
    this.#limit = limit;
  }

  /** How many statements are prepared now. */
  get size(): number {
    return this.#prepared.size;
  }

  /**
   * Runs one statement as PGlite's query() would: after any open PGlite transaction (Prisma's) ends, and inside
   * whatever transaction block the connection is in (a session's BEGIN), then syncs the file system as query() does.
   */
  async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    await this.#lite._checkReady();
    return this.#lite._runExclusiveTransaction(() => this.inTransaction<R>(sql, params));
  }

  /**
   * query() from inside a PGlite transaction's callback (lite.transaction), which holds what query() would wait for:
   * the statement runs in that transaction.
   */
  inTransaction<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    const lite = this.#lite;
    return lite._runExclusiveQuery(async () => {
      let rows: R[];
      const cached = this.#statement(sql);
      try {
        rows = await this.#run<R>(cached ?? (await this.#prepare(sql)), params);
      } catch (err) {
        // Only a statement prepared earlier can have gone stale; one prepared just now failed for its own reasons.
        if (!cached || !STALE.has((err as wire.DatabaseError).code ?? '')) throw withQuery(err, sql, params);
        this.#prepared.delete(sql);
        // Inside a failed transaction block nothing more can run: the next call, after the rollback, prepares anew.
        if (lite.isInTransaction()) throw withQuery(err, sql, params);
        try {
          rows = await this.#run<R>(await this.#prepare(sql), params);
        } catch (again) {
          throw withQuery(again, sql, params);
        }
      }
      await lite.syncToFs();
      return rows;
    });
  }

  /** The statement's prepared form, marked as the most recently used. */
  #statement(sql: string): Prepared | undefined {
    const p = this.#prepared.get(sql);
    if (p) {
      this.#prepared.delete(sql);
      this.#prepared.set(sql, p);
    }
    return p;
  }

  async #prepare(sql: string): Promise<Prepared> {
    while (this.#prepared.size >= this.#limit) {
      const [oldest, p] = this.#prepared.entries().next().value as [string, Prepared];
      this.#prepared.delete(oldest);
      await this.#close(p.name);
    }
    const name = statementName(sql);
    this.prepares++;
    // A statement of that name may be left from before (one found stale inside a transaction block, which could not
    // be closed then): Close first. Close and Parse are not transactional, so a statement prepared inside a
    // transaction block outlives its rollback.
    const messages = await this.#exec(
      serialize.close({ type: 'S', name }),
      serialize.parse({ name, text: sql }),
      serialize.describe({ type: 'S', name }),
    );
    const params = messages.find((m): m is wire.ParameterDescriptionMessage => m.name === 'parameterDescription');
    const row = messages.find((m): m is wire.RowDescriptionMessage => m.name === 'rowDescription');
    const prepared: Prepared = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      fields: row?.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })) ?? [],
    };
    this.#prepared.set(sql, prepared);
    return prepared;
  }

  /** Closes a prepared statement; closing one that does not exist is not an error. */
  async #close(name: string): Promise<void> {
    await this.#exec(serialize.close({ type: 'S', name }));
  }

  async #run<R>(p: Prepared, params: unknown[]): Promise<R[]> {
    const lite = this.#lite;
    // The serializer of the parameter's type, as query() picks it (a Date for a timestamp, an object for json).
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const ser = lite.serializers[p.paramTypes[i]!];
      return ser ? ser(v) : String(v);
    });
    const messages = await this.#exec(serialize.bind({ statement: p.name, values }), serialize.execute({}));
    const rows: R[] = [];
    for (const m of messages) {
      if (m.name !== 'dataRow') continue;
      const row: Record<string, unknown> = {};
      (m as wire.DataRowMessage).fields.forEach((x, i) => {
        const f = p.fields[i]!;
        row[f.name] = types.parseType(x, f.dataTypeID, lite.parsers);
      });
      rows.push(row as R);
    }
    return rows;
  }

  /**
   * Sends the messages and a Sync as one batch: an error in any of them skips the rest up to the Sync, after which
   * the connection is ready again (and an implicit transaction rolled back), so a failed statement leaves nothing
   * behind. Throws the first error PostgreSQL reported.
   */
  #exec(...messages: Uint8Array[]): Promise<wire.BackendMessage[]> {
    return this.#lite.execProtocolStream(concat([...messages, serialize.sync()]), { syncToFs: false });
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The error as PGlite's query() throws it: carrying the statement and its parameters. */
function withQuery(err: unknown, sql: string, params: unknown[]): unknown {
  if (err && typeof err === 'object' && 'code' in err) Object.assign(err, { query: sql, params });
  return err;
}
