// Rows that hand-written SQL reads as JSON (`row_to_json`), turned into the shapes Prisma gives for the same model:
// DateTime columns become Date, BigInt columns bigint. Columns keep Prisma's field names (prisma/schema.prisma maps
// only table names), so nothing else changes, and the schema resolves these rows like rows Prisma read.
import { getDatamodel } from '../generated/pothos-types.js';

type Revive = { dates: string[]; bigints: string[] };
const models = new Map<string, Revive>();
for (const [name, model] of Object.entries(getDatamodel().datamodel.models)) {
  const scalar = (type: string) => model.fields.filter((f) => f.kind === 'scalar' && f.type === type && !f.isList).map((f) => f.name);
  models.set(name, { dates: scalar('DateTime'), bigints: scalar('BigInt') });
}

/**
 * SQL for row `alias` of `model` as JSON, in the form `revive` reads: BigInt columns are sent as text, so values past
 * 2^53 stay exact (JSON numbers would round them).
 */
export function jsonOf(model: string, alias: string): string {
  const spec = models.get(model);
  if (!spec) throw new Error(`No model ${model} in the Prisma datamodel`);
  if (spec.bigints.length === 0) return `row_to_json(${alias})`;
  return `(to_jsonb(${alias}) || jsonb_build_object(${spec.bigints.map((f) => `'${f}', ${alias}."${f}"::text`).join(', ')}))`;
}

/**
 * Revives one row in place and returns it. JSON renders `timestamp(3)` without a zone; Prisma stores UTC, so the
 * text is read as UTC. BigInt columns arrive as text (jsonOf), exact, or as JSON numbers (row_to_json), exact below 2^53.
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
