// The spec writes enum values in lower case (download_state: "visible"); GraphQL enums are upper case.
// At start-up each operation is walked once to find which response keys hold enum values; results are then
// lower-cased along exactly those paths.
import {
  getNamedType,
  GraphQLEnumType,
  isCompositeType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** Response key → nested tree, or `true` for an enum leaf. */
export type EnumTree = Map<string, EnumTree | true>;

export function enumTree(schema: GraphQLSchema, doc: DocumentNode, operation: OperationDefinitionNode): EnumTree {
  const fragments = new Map(
    doc.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((f) => [f.name.value, f]),
  );
  const root = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();

  const walk = (type: GraphQLCompositeType, set: SelectionSetNode, into: EnumTree) => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (!('getFields' in type)) continue;
        const field = type.getFields()[sel.name.value];
        if (!field) continue;
        const named = getNamedType(field.type);
        const key = sel.alias?.value ?? sel.name.value;
        if (named instanceof GraphQLEnumType) into.set(key, true);
        else if (sel.selectionSet && isCompositeType(named)) {
          const sub: EnumTree = (into.get(key) as EnumTree | undefined) ?? new Map();
          walk(named, sel.selectionSet, sub);
          if (sub.size > 0) into.set(key, sub);
        }
      } else {
        const frag = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
        if (!frag) continue;
        const cond = frag.typeCondition ? schema.getType(frag.typeCondition.name.value) : type;
        if (cond && isCompositeType(cond)) walk(cond, frag.selectionSet, into);
      }
    }
  };
  const tree: EnumTree = new Map();
  if (root) walk(root, operation.selectionSet, tree);
  return tree;
}

/** Lower-cases enum values along `tree`, in place (execution results are fresh objects owned by the caller). */
export function lowerEnums(value: unknown, tree: EnumTree): unknown {
  if (tree.size === 0 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (const v of value) lowerEnums(v, tree);
    return value;
  }
  const out = value as Record<string, unknown>;
  for (const [key, sub] of tree) {
    const v = out[key];
    if (sub === true) {
      if (typeof v === 'string') out[key] = v.toLowerCase();
      else if (Array.isArray(v)) out[key] = v.map((x) => (typeof x === 'string' ? x.toLowerCase() : x));
    } else if (v !== undefined) {
      out[key] = lowerEnums(v, sub);
    }
  }
  return out;
}
