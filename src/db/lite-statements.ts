// Named prepared statements on the embedded database. PGlite's query() sends every statement as an unnamed one
// (Parse, Describe, Bind, Describe, Execute, Sync: six calls into WebAssembly), so PostgreSQL parses, analyses and
// plans the same hand-written read again on every request. Here each statement text is parsed once under a name and
// its parameter and result types remembered; a request is then one Bind/Execute/Sync message. The rows come back
// exactly as query() returns them (same type parsers, same serializers for the parameters).
import {
  protocol,
  types,
  type ParserOptions,
  type PGlite,
  type Results,
  type messages as wire,
} from '@electric-sql/pglite';
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

/** How many texts run once are remembered, to be prepared if they come again (results()). */
const SEEN_ONCE_LIMIT = 1024;

/** query()'s row options that results() follows. */
export interface ResultOptions {
  rowMode?: 'object' | 'array';
  parsers?: ParserOptions;
}

/** query()'s answer (rows, fields, the command and the rows it wrote), as results() gives it. */
export type { Results };

/**
 * SQLSTATEs after which a prepared statement is worth preparing again: its result type changed under it (a migration
 * altered a table it reads: "cached plan must not change result type"), or it no longer exists (someone ran
 * DEALLOCATE ALL or DISCARD ALL on the one connection).
 */
const STALE = new Set(['0A000', '26000']);

/**
 * Run around a statement to be planned for its parameters' values every time (query's `customPlan`), in one batch:
 * the first sets plan_cache_mode for the current transaction only (the implicit one the batch's Sync ends, or the
 * transaction block the connection is in, which a failed statement aborts), the second puts it back after the
 * statement (inside a transaction block the setting would otherwise outlast it).
 */
const CUSTOM_PLAN = "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)";
const RESET_PLAN = 'RESET plan_cache_mode';

export class LiteStatements {
  readonly #lite: PGlite;
  readonly #limit: number;
  /** Statement text → its prepared form, least recently used first (a Map keeps insertion order). */
  readonly #prepared = new Map<string, Prepared>();
  /** Texts results() ran once, unprepared, oldest first. */
  readonly #seenOnce = new Set<string>();
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
  async query<R>(sql: string, params: unknown[] = [], opts: { customPlan?: boolean } = {}): Promise<R[]> {
    await this.#lite._checkReady();
    return this.#lite._runExclusiveTransaction(() => this.inTransaction<R>(sql, params, opts));
  }

  /**
   * PGlite's query() for another client's statements (Prisma's, through pglite-prisma-adapter), with query()'s row
   * options and its whole answer (rows, fields, affectedRows). A text is prepared from its second run on: a text run
   * once (a one-off shape) costs what query() costs, not a prepare and, later, a close. `inTransaction`: called from
   * inside a PGlite transaction's callback, as `tx.query` is.
   */
  async results<R>(
    sql: string,
    params: unknown[],
    options: ResultOptions,
    inTransaction: boolean,
    unprepared: () => Promise<Results<R>>,
  ): Promise<Results<R>> {
    if (!this.#statement(sql)) {
      if (!this.#seenOnce.delete(sql)) {
        if (this.#seenOnce.size >= SEEN_ONCE_LIMIT) this.#seenOnce.delete(this.#seenOnce.values().next().value!);
        this.#seenOnce.add(sql);
        return unprepared();
      }
    }
    if (inTransaction) return this.#answer<R>(sql, params, {}, options);
    await this.#lite._checkReady();
    return this.#lite._runExclusiveTransaction(() => this.#answer<R>(sql, params, {}, options));
  }

  /**
   * query() from inside a PGlite transaction's callback (lite.transaction), which holds what query() would wait for:
   * the statement runs in that transaction.
   */
  async inTransaction<R>(sql: string, params: unknown[] = [], opts: { customPlan?: boolean } = {}): Promise<R[]> {
    return (await this.#answer<R>(sql, params, opts)).rows;
  }

  #answer<R>(
    sql: string,
    params: unknown[],
    opts: { customPlan?: boolean },
    shape: ResultOptions = {},
  ): Promise<Results<R>> {
    const lite = this.#lite;
    return lite._runExclusiveQuery(async () => {
      let rows: Results<R>;
      // customPlan: planned for the parameters' values every time, as an unnamed statement is (PostgreSQL would
      // otherwise come to run a prepared statement with a generic plan), but parsed and analysed once.
      let around = opts.customPlan ? await this.#around() : null;
      const cached = this.#statement(sql);
      try {
        rows = await this.#run<R>(cached ?? (await this.#prepare(sql)), params, around, shape);
      } catch (err) {
        // Only a statement prepared earlier can have gone stale; one prepared just now failed for its own reasons.
        if ((!cached && !around) || !STALE.has((err as wire.DatabaseError).code ?? ''))
          throw withQuery(err, sql, params);
        this.#prepared.delete(sql);
        this.#prepared.delete(CUSTOM_PLAN);
        this.#prepared.delete(RESET_PLAN);
        // Inside a failed transaction block nothing more can run: the next call, after the rollback, prepares anew.
        if (lite.isInTransaction()) throw withQuery(err, sql, params);
        try {
          if (around) around = await this.#around();
          rows = await this.#run<R>(await this.#prepare(sql), params, around, shape);
        } catch (again) {
          throw withQuery(again, sql, params);
        }
      }
      await lite.syncToFs();
      return rows;
    });
  }

  /** The statements run around one planned for its values (CUSTOM_PLAN, RESET_PLAN), prepared now if they are not. */
  async #around(): Promise<[Prepared, Prepared]> {
    return [await this.#ready(CUSTOM_PLAN), await this.#ready(RESET_PLAN)];
  }

  /** The statement's prepared form, prepared now if it is not. */
  async #ready(sql: string): Promise<Prepared> {
    return this.#statement(sql) ?? (await this.#prepare(sql));
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

  /**
   * Runs `p`; with `around`, between the first statement and the second (without parameters; their rows left out).
   * Its answer as query() gives it: rows as objects (or arrays with rowMode 'array'), parsed by PGlite's parsers and
   * the options' own, and the rows the statement inserted, updated or deleted.
   */
  async #run<R>(
    p: Prepared,
    params: unknown[],
    around: [Prepared, Prepared] | null = null,
    shape: ResultOptions = {},
  ): Promise<Results<R>> {
    const lite = this.#lite;
    // The serializer of the parameter's type, as query() picks it (a Date for a timestamp, an object for json).
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const ser = lite.serializers[p.paramTypes[i]!];
      return ser ? ser(v) : String(v);
    });
    const run = (statement: string, v: (string | null)[]) => [
      serialize.bind({ statement, values: v }),
      serialize.execute({}),
    ];
    const messages = await this.#exec(
      ...(around ? run(around[0].name, []) : []),
      ...run(p.name, values),
      ...(around ? run(around[1].name, []) : []),
    );
    // The statement's rows: those after the first statement's CommandComplete, when there is one before it.
    let completed = 0;
    let tag = '';
    const mine = around ? 1 : 0;
    const rows: R[] = [];
    // A value is read by the options' parser of its type when they have one, else as query() reads it. Looked up per
    // value, not merged into one map per call: PGlite's map holds some 300 types, and copying it took 60 µs.
    const own = shape.parsers as Record<number, (x: string, oid: number) => unknown> | undefined;
    const parse = (x: string | null, oid: number) => {
      const parser = x === null ? undefined : own?.[oid];
      return parser ? parser(x!, oid) : types.parseType(x, oid, lite.parsers);
    };
    const asArrays = shape.rowMode === 'array';
    for (const m of messages) {
      if (m.name === 'commandComplete') {
        if (completed === mine) tag = (m as wire.CommandCompleteMessage).text;
        completed++;
      }
      if (m.name !== 'dataRow' || completed !== mine) continue;
      const fields = (m as wire.DataRowMessage).fields;
      if (asArrays) {
        rows.push(fields.map((x, i) => parse(x, p.fields[i]!.dataTypeID)) as R);
        continue;
      }
      const row: Record<string, unknown> = {};
      for (let i = 0; i < fields.length; i++) {
        const f = p.fields[i]!;
        row[f.name] = parse(fields[i]!, f.dataTypeID);
      }
      rows.push(row as R);
    }
    return { rows, fields: p.fields, ...written(tag) };
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

/** What a command tag says ("UPDATE 3", "INSERT 0 1", "SELECT 2"), as PGlite's query() reads it. */
function written(tag: string): { command?: string; rowCount?: number; affectedRows: number } {
  if (!tag) return { affectedRows: 0 };
  const words = tag.split(' ');
  const command = words[0]!;
  const n = Number.parseInt(words[words.length - 1]!, 10);
  return {
    command,
    ...(Number.isNaN(n) ? {} : { rowCount: n }),
    affectedRows: WRITES.has(command) && !Number.isNaN(n) ? n : 0,
  };
}
const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

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
