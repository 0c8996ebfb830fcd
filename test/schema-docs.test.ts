// GraphiQL's docs pane is the front-end developer's manual: every type, field, argument, enum value and input
// field of the schema carries a description (at least 95% of them, and every root field and mutation).
import { describe, expect, it } from 'vitest';
import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isUnionType,
  type GraphQLNamedType,
} from 'graphql';
import { schema } from '../src/modules/index.js';

interface Item {
  path: string;
  described: boolean;
}

function items(): Item[] {
  const out: Item[] = [];
  const has = (d: string | null | undefined) => typeof d === 'string' && d.trim().length > 0;
  for (const type of Object.values(schema.getTypeMap()) as GraphQLNamedType[]) {
    if (
      type.name.startsWith('__') ||
      (isScalarType(type) && ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(type.name))
    )
      continue;
    out.push({ path: type.name, described: has(type.description) });
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const f of Object.values(type.getFields())) {
        out.push({ path: `${type.name}.${f.name}`, described: has(f.description) });
        for (const a of f.args) out.push({ path: `${type.name}.${f.name}(${a.name})`, described: has(a.description) });
      }
    } else if (isInputObjectType(type)) {
      for (const f of Object.values(type.getFields()))
        out.push({ path: `${type.name}.${f.name}`, described: has(f.description) });
    } else if (isEnumType(type)) {
      for (const v of type.getValues()) out.push({ path: `${type.name}.${v.name}`, described: has(v.description) });
    } else if (isUnionType(type)) {
      // described by the type itself
    }
  }
  return out;
}

describe('schema descriptions', () => {
  const all = items();
  const missing = all.filter((i) => !i.described).map((i) => i.path);
  const share = (all.length - missing.length) / all.length;

  it(`describe at least 95% of types, fields, arguments, enum values and input fields (now ${(share * 100).toFixed(1)}% of ${all.length})`, () => {
    expect(share, `undescribed: ${missing.join(', ')}`).toBeGreaterThanOrEqual(0.95);
  });

  it('describe every root field, mutation and subscription', () => {
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter(
      (t) => t != null,
    );
    const undescribed = roots.flatMap((t) =>
      Object.values(t.getFields())
        .filter((f) => !f.description?.trim())
        .map((f) => `${t.name}.${f.name}`),
    );
    expect(undescribed).toEqual([]);
  });
});
