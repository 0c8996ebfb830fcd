// Rows that hand-written SQL reads as JSON (`jsonOf`), turned into the shapes Prisma gives for the same model:
// DateTime columns become Date, BigInt columns bigint. Columns keep Prisma's field names (prisma/schema.prisma maps
// only table names), so nothing else changes, and the schema resolves these rows like rows Prisma read.
import { getDatamodel } from '../generated/pothos-types.js';
import type { Database } from './database.js';

/** A row of json_build_object columns, read by column name and turned into model rows by revive(). */
// biome-ignore lint/suspicious/noExplicitAny: its columns are JSON built in SQL, each read as the statement shaped it
export type JsonRow = Record<string, any>;

type Revive = { dates: string[]; bigints: string[]; columns: string[] };
const models = new Map<string, Revive>();
for (const [name, model] of Object.entries(getDatamodel().datamodel.models)) {
  const scalar = (type: string) =>
    model.fields.filter((f) => f.kind === 'scalar' && f.type === type && !f.isList).map((f) => f.name);
  const columns = model.fields.filter((f) => f.kind === 'scalar' || f.kind === 'enum').map((f) => f.name);
  models.set(name, { dates: scalar('DateTime'), bigints: scalar('BigInt'), columns });
}

const built = new Map<string, string>();

/** The scalar and enum columns of `model`, in the datamodel's order. */
export function columnsOf(model: string): readonly string[] {
  const spec = models.get(model);
  if (!spec) throw new Error(`No model ${model} in the Prisma datamodel`);
  return spec.columns;
}

/**
 * SQL for row `alias` of `model` as JSON, in the form `revive` reads: BigInt columns are sent as text, so values past
 * 2^53 stay exact (JSON numbers would round them). `columns` (some of the model's, in the datamodel's order) limits
 * the object to those; every column when absent. Built once per model, alias and column set.
 */
export function jsonOf(model: string, alias: string, columns?: readonly string[]): string {
  const key = columns ? `${model} ${alias} ${columns.join(',')}` : `${model} ${alias}`;
  let sql = built.get(key);
  if (sql === undefined) {
    sql = buildJsonOf(model, alias, columns);
    // Column sets come from the operations' selections, which are few; the bound only guards against a flood.
    if (built.size < 1000) built.set(key, sql);
  }
  return sql;
}

function buildJsonOf(model: string, alias: string, columns?: readonly string[]): string {
  const spec = models.get(model);
  if (!spec) throw new Error(`No model ${model} in the Prisma datamodel`);
  const names = columns ?? spec.columns;
  for (const f of names) if (!spec.columns.includes(f)) throw new Error(`No column ${f} in model ${model}`);
  // json_build_object over the named columns: cheaper for the server than row_to_json or to_jsonb with the bigints
  // merged in, and BigInt columns go as text. It takes at most 100 arguments (50 columns).
  if (names.length > 50) throw new Error(`Model ${model} has more than 50 columns: jsonOf cannot build it`);
  const big = new Set(spec.bigints);
  return `json_build_object(${names.map((f) => `'${f}', ${alias}."${f}"${big.has(f) ? '::text' : ''}`).join(', ')})`;
}

/**
 * Revives one row in place and returns it. JSON renders `timestamp(3)` without a zone; Prisma stores UTC, so the
 * text is read as UTC. BigInt columns arrive as text (jsonOf), exact, or as JSON numbers, exact below 2^53.
 */
export function revive<T>(model: string, row: Record<string, unknown> | null): T {
  if (row === null) return null as T;
  const spec = models.get(model);
  if (!spec) throw new Error(`No model ${model} in the Prisma datamodel`);
  for (const f of spec.dates) {
    const v = row[f];
    if (typeof v === 'string') row[f] = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? v : `${v}Z`);
  }
  for (const f of spec.bigints) {
    const v = row[f];
    if (typeof v === 'number' || typeof v === 'string') row[f] = BigInt(v);
  }
  return row as T;
}

/** Runs one statement straight through the driver and answers its first row (null when it has none). */
export async function firstRow(db: Pick<Database, 'query'>, sql: string, params: unknown[]): Promise<JsonRow | null> {
  const rows = await db.query<JsonRow>(sql, params);
  return rows[0] ?? null;
}

/** A Pothos/Prisma query argument, as a resolver receives it (`{}`, `{ include: … }`, `{ select: … }`). */
export type PrismaQuery = { include?: Record<string, unknown>; select?: unknown; [k: string]: unknown } | undefined;

/**
 * The relations a query argument includes (`{}` for none), or null when it holds anything else (a `select`…): a
 * hand-written read then leaves the read to Prisma.
 */
export function includeOf(query: PrismaQuery): Record<string, unknown> | null {
  if (!query || Object.keys(query).length === 0) return {};
  if (Object.keys(query).some((k) => k !== 'include')) return null;
  return query.include ?? {};
}
