// The cost of an operation, computed from the document, the schema and the variables before anything runs.
//
//   - a scalar or enum field costs 0, a list of them 1 plus its size (each item 1);
//   - an object field costs 1 plus the cost of its selection;
//   - a list field of objects costs 1 plus its size times (1 plus the cost of its selection): each object it can
//     answer counts 1, even one whose selection is scalars only, so that the cost is an upper bound of the objects
//     an operation can answer. The size is:
//       · the page size of a paged field (`first`, `last` or `perPage`: the value or variable sent, at most
//         MAX_PAGE_SIZE, else the argument's default, else DEFAULT_PAGE_SIZE) — for a paged field that returns a page object
//         (`{ nodes, pagination }`, `{ edges, pageInfo }`), the page size multiplies the page's lists
//         (`nodes`, `edges`) and not its page information;
//       · the number of ids sent, for a list fetched by an `ids` argument;
//       · the bound of a list of fixed length (LIST_BOUNDS: a download's tags, the permission names, …);
//       · 1 for the lists of introspection types (their length is fixed by the schema and served from memory);
//       · DEFAULT_PAGE_SIZE for any other list (the service's schema has none: test/list-bounds.test.ts).
// Fragments and inline fragments count where they are spread; the selections of every type condition are added
// (an upper bound for abstract types). Validation has already refused unknown fields and fragment cycles.
import { LIMITS } from '../config.js';
import {
  getNamedType,
  getNullableType,
  isLeafType,
  isListType,
  isCompositeType,
  Kind,
  TypeNameMetaFieldDef,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
  visit,
} from 'graphql';
import { PERMISSIONS, SCOPES } from '../permissions/names.js';
import { EVENT_TYPES } from '../db/outbox.js';

export const DEFAULT_PAGE_SIZE = LIMITS.defaultPageSize;
/** Lists answer at most this many rows whatever the page size asked for (larger values are clamped or refused). */
export const MAX_PAGE_SIZE = LIMITS.maxPageSize;
const PAGE_SIZE_ARGS = ['first', 'last', 'perPage'] as const;
const IDS_ARG = 'ids';

/**
 * Lists of the schema that take no page size because their length has a small fixed bound, by `Type.field`, with
 * that bound. Every other list field is a page's rows, takes `first`/`last`/`perPage`, or is fetched by `ids`
 * (test/list-bounds.test.ts walks the schema to hold it so).
 */
export const LIST_BOUNDS: Readonly<Record<string, number>> = {
  'Download.tags': LIMITS.maxTags,
  'Viewer.scopes': SCOPES.length,
  'ApiKey.scopes': SCOPES.length,
  'Group.permissions': PERMISSIONS.length,
  'Query.effectivePermissions': PERMISSIONS.length,
  'Query.filesByHash': LIMITS.maxHashes,
  'SearchFacets.categories': LIMITS.searchFacetSize,
  'SearchFacets.tags': LIMITS.searchFacetSize,
  'SearchFacets.prefixes': LIMITS.searchFacetSize,
  'Version.compatibleWith': LIMITS.maxCompatibleWith,
  'Version.dependencies': LIMITS.maxDependencies,
  'Query.updates': LIMITS.maxUpdateHashes,
  'Download.stats': LIMITS.maxStatsDays,
  'Query.downloadStats': LIMITS.maxStatsDays,
  'DependencyResolution.versions': LIMITS.maxResolvedVersions,
  'DependencyResolution.conflicts': LIMITS.maxResolveConflicts,
  // A list of lists of ids: costed at every id it can hold.
  'DependencyResolution.cycles': LIMITS.maxResolveCycles * (LIMITS.maxResolveDepth + 1),
  'Webhook.events': EVENT_TYPES.length,
};

export function operationOf(
  document: DocumentNode,
  operationName?: string | null,
): OperationDefinitionNode | undefined {
  const ops = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operationName) return ops.find((o) => o.name?.value === operationName);
  return ops.length === 1 ? ops[0] : undefined;
}

/** Costs figured per schema and document, by operation name and the values of the variables a cost reads. */
const costs = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, number>>>();
/** Costs kept per document (its operations times the page sizes its requests asked for); past it they are dropped. */
const COSTS_PER_DOCUMENT = 256;
const variablesRead = new WeakMap<DocumentNode, readonly string[]>();
const seen = new WeakSet<DocumentNode>();

/**
 * The variables a cost reads: those in the arguments it reads (page sizes, `ids`), anywhere in the document. The
 * rest (a download's id, a filter) cannot change it.
 */
function costVariables(document: DocumentNode): readonly string[] {
  let names = variablesRead.get(document);
  if (names) return names;
  const found = new Set<string>();
  const collect = (node: ValueNode) => {
    if (node.kind === Kind.VARIABLE) found.add(node.name.value);
    else if (node.kind === Kind.LIST) node.values.forEach(collect);
  };
  visit(document, {
    Argument(arg) {
      if ((PAGE_SIZE_ARGS as readonly string[]).includes(arg.name.value) || arg.name.value === IDS_ARG)
        collect(arg.value);
    },
  });
  names = [...found].sort();
  variablesRead.set(document, names);
  return names;
}

/**
 * The cost of the operation `operationName` of `document` (0 when there is no such operation: execution refuses it).
 * Figured once per schema, document, operation and values of the variables it reads (costVariables): a request for
 * another row with the same document and page size costs what the last one did (from the document's second use).
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | null | undefined,
  operationName?: string | null,
): number {
  // A document's first use is figured as it comes: one that never returns (a client's endless distinct documents, a
  // refused attack) costs no walk for the variables and no entry.
  if (!seen.has(document)) {
    seen.add(document);
    return figuredCost(schema, document, variables, operationName);
  }
  let key: string;
  try {
    key = JSON.stringify([
      operationName ?? null,
      costVariables(document).map((n) => (variables && n in variables ? [variables[n]] : [])),
    ]);
  } catch {
    return figuredCost(schema, document, variables, operationName); // a value JSON cannot write (a BigInt)
  }
  let bySchema = costs.get(schema);
  if (!bySchema) {
    bySchema = new WeakMap();
    costs.set(schema, bySchema);
  }
  let known = bySchema.get(document);
  if (!known) {
    known = new Map();
    bySchema.set(document, known);
  }
  let cost = known.get(key);
  if (cost === undefined) {
    cost = figuredCost(schema, document, variables, operationName);
    if (known.size >= COSTS_PER_DOCUMENT) known.clear();
    known.set(key, cost);
  }
  return cost;
}

function figuredCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | null | undefined,
  operationName?: string | null,
): number {
  const operation = operationOf(document, operationName);
  if (!operation) return 0;
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;

  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

  const defaults = new Map<string, ValueNode>();
  for (const v of operation.variableDefinitions ?? [])
    if (v.defaultValue) defaults.set(v.variable.name.value, v.defaultValue);

  /** A value sent for an argument: the literal, or the variable's value (or its default in the operation). */
  const argumentValue = (node: ValueNode): unknown => {
    if (node.kind === Kind.VARIABLE) {
      const name = node.name.value;
      if (variables && name in variables) return variables[name];
      const fallback = defaults.get(name);
      return fallback ? argumentValue(fallback) : undefined;
    }
    if (node.kind === Kind.INT) return Number(node.value);
    if (node.kind === Kind.LIST) return node.values.map(argumentValue);
    return undefined;
  };

  const argument = (field: FieldNode, name: string) => field.arguments?.find((a) => a.name.value === name);

  /** The page size a paged field asks for, or undefined when the field takes no page-size argument. */
  const pageSize = (field: FieldNode, def: GraphQLField<unknown, unknown>): number | undefined => {
    let declared = false;
    for (const name of PAGE_SIZE_ARGS) {
      const arg = def.args.find((a) => a.name === name);
      if (!arg) continue;
      declared = true;
      const sent = argument(field, name);
      const value = sent ? argumentValue(sent.value) : arg.defaultValue;
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return Math.min(value, MAX_PAGE_SIZE);
    }
    return declared ? DEFAULT_PAGE_SIZE : undefined;
  };

  const listSize = (
    field: FieldNode,
    def: GraphQLField<unknown, unknown>,
    parent: GraphQLCompositeType,
    elementType: GraphQLNamedType,
  ): number => {
    if (def.args.some((a) => a.name === IDS_ARG)) {
      const sent = argument(field, IDS_ARG);
      const ids = sent ? argumentValue(sent.value) : undefined;
      if (Array.isArray(ids)) return ids.length;
      if (ids !== undefined && ids !== null) return 1; // a single id is coerced to a list of one
    }
    if (elementType?.name.startsWith('__')) return 1;
    return LIST_BOUNDS[`${parent.name}.${def.name}`] ?? DEFAULT_PAGE_SIZE;
  };

  const fieldDef = (parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined => {
    if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
    if (parent === root && name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
    if (parent === root && name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
    return 'getFields' in parent ? parent.getFields()[name] : undefined;
  };

  const fragmentCosts = new Map<string, number>();

  /** `page`: the page size of the paged field whose page object this selection is on (its lists take that size). */
  const selectionCost = (set: SelectionSetNode, parent: GraphQLCompositeType, page: number | undefined): number => {
    let total = 0;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        total += fieldCost(sel, parent, page);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        total += selectionCost(sel.selectionSet, type && isCompositeType(type) ? type : parent, page);
      } else {
        const fragment = fragments.get(sel.name.value);
        if (!fragment) continue;
        const key = `${sel.name.value}:${page ?? ''}`;
        let cost = fragmentCosts.get(key);
        if (cost === undefined) {
          const type = schema.getType(fragment.typeCondition.name.value);
          cost = selectionCost(fragment.selectionSet, type && isCompositeType(type) ? type : parent, page);
          fragmentCosts.set(key, cost);
        }
        total += cost;
      }
    }
    return total;
  };

  const fieldCost = (field: FieldNode, parent: GraphQLCompositeType, page: number | undefined): number => {
    const def = fieldDef(parent, field.name.value);
    if (!def) return 0;
    const nullable = getNullableType(def.type);
    const named = getNamedType(def.type);
    const isList = isListType(nullable);
    const own = pageSize(field, def);
    // A list of scalars or enums counts each item 1, at its page size or bound (a download's tags: 20).
    if (isLeafType(named)) return isList ? 1 + (own ?? page ?? listSize(field, def, parent, named)) : 0;
    const children = field.selectionSet
      ? selectionCost(field.selectionSet, named, own !== undefined && !isList ? own : undefined)
      : 0;
    if (!isList) return 1 + children;
    const size = own ?? page ?? listSize(field, def, parent, named);
    return 1 + size * (1 + children);
  };

  return selectionCost(operation.selectionSet, root, undefined);
}
