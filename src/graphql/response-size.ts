// The response size limit (GRAPHQL_MAX_RESPONSE_BYTES): the bytes of an operation's result are counted as its leaf
// values (scalars, enums, lists of them) are resolved, on both executors (graphql-jit calls the same resolvers), and
// the operation stops once the running total passes the limit: 400 `operation_too_expensive`, `params { kind:
// "response_size", limit }`. Objects add little of their own (their number is bounded by the cost limit); what makes a
// result large is its text, and text is a leaf.
//
// Where leaves are counted, decided once per schema, in place:
// - A leaf read straight off its object (no resolver of its own: a column exposed under its name, or under another
//   name with `t.exposeX`) is counted by the field that returned the object: that field's resolver is wrapped, and
//   when its value arrives (an object, or a list of them) it adds, per object, the selected leaves' keys and values.
//   Those leaves keep no resolver, so graphql-jit reads them as properties; a resolver on every leaf cost a
//   resolver call and a resolve-info object per value (14-16% of the CPU of a one-row read or a 100-row list,
//   `npm run bench:ab`). The selected leaves of a selection are worked out once per place in the document (and per
//   value of the variables its @include/@skip name), not per object.
// - A leaf with a resolver of its own (a computed value, a permission flag), and every leaf of the root types, is
//   counted by wrapping its resolver, as its value resolves.
// An operation counts only when its context carries a budget (set by operationLimitsPlugin on /graphql and by the
// REST adapter per route): other callers of the schema pay one property read per wrapped field. Past the limit the
// operation's answer is decided (its deadline is aborted with the refusal); what still resolves (graphql-jit takes no
// abort signal and runs to its end) answers a cheap placeholder (a wrapped leaf its type's cheapest value, a list
// none, a nullable object null), so the abandoned run neither keeps text nor makes an error object per leaf.
import {
  defaultFieldResolver,
  getDirectiveValues,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isAbstractType,
  Kind,
  getNamedType,
  getNullableType,
  isEnumType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  type FieldNode,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLLeafType,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { ApiError } from '../errors.js';

export const RESPONSE_BUDGET = Symbol('response budget');

export class ResponseBudget {
  used = 0;
  over = false;
  constructor(
    readonly limit: number,
    private readonly onExceed: (refusal: ApiError) => void,
  ) {}

  /** Counts `bytes` more; past the limit, refuses the operation (once). Returns whether the budget still holds. */
  spend(bytes: number): boolean {
    this.used += bytes;
    if (this.used <= this.limit) return true;
    if (!this.over) {
      this.over = true;
      this.onExceed(responseTooLarge(this.limit));
    }
    return false;
  }
}

export function responseTooLarge(limit: number): ApiError {
  return new ApiError(
    'operation_too_expensive',
    `The operation's result grew past ${limit} bytes, over the limit of ${limit} (response_size), and was stopped: ask for fewer or smaller fields (long texts such as description), or smaller pages.`,
    { kind: 'response_size', limit },
  );
}

/** Gives the operation run with `context` a budget of `limit` bytes; `onExceed` is told once when it is spent. */
export function startResponseBudget(
  context: unknown,
  limit: number,
  onExceed: (refusal: ApiError) => void,
): ResponseBudget | undefined {
  if (!context || typeof context !== 'object') return undefined;
  const budget = new ResponseBudget(limit, onExceed);
  (context as { [RESPONSE_BUDGET]?: ResponseBudget })[RESPONSE_BUDGET] = budget;
  return budget;
}

/** The bytes `value` adds to a JSON result, about: strings by their UTF-16 length (their UTF-8 size for ASCII text). */
export function sizeOf(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return value.length + 2;
    case 'number':
      return 8;
    case 'boolean':
      return 5;
    case 'bigint':
      return 20;
    case 'undefined':
      return 4;
    case 'object': {
      if (value === null) return 4;
      if (Array.isArray(value)) {
        let n = 2;
        for (const v of value) n += sizeOf(v) + 1;
        return n;
      }
      if (value instanceof Date) return 26;
      try {
        return JSON.stringify(value)?.length ?? 4;
      } catch {
        return 4;
      }
    }
    default:
      return 4;
  }
}

/** What a leaf answers once its operation is refused: null where allowed, else the cheapest value of its type. */
function placeholder(field: GraphQLField<unknown, unknown>): unknown {
  if (!isNonNullType(field.type)) return null;
  const inner = getNullableType(field.type);
  if (isListType(inner)) return [];
  const named = getNamedType(field.type) as GraphQLLeafType;
  if (isEnumType(named)) return named.getValues()[0]?.value ?? null;
  switch (named.name) {
    case 'String':
    case 'ID':
    case 'DateTime':
      return '';
    case 'Int':
    case 'Float':
    case 'Long':
      return 0;
    case 'Boolean':
      return false;
    default:
      return null;
  }
}

const wrapped = new WeakSet<GraphQLField<unknown, unknown>>();
const isPromise = (v: unknown): v is PromiseLike<unknown> =>
  typeof (v as PromiseLike<unknown> | null)?.then === 'function';

/** A leaf counted by its object: the property its value is read from, and what its key adds (`"key":` and a comma). */
interface CountedLeaf {
  property: string;
  key: number;
}

/** Where a leaf of an object type is counted: by the field that returned the object ('parent'), or by itself. */
const PARENT_COUNTED = Symbol('counted by the field that returned its object');
type ParentCounted = { [PARENT_COUNTED]?: string };

/** The property a parent-counted leaf is read from, or undefined when the leaf counts itself. */
function parentCountedProperty(field: GraphQLField<unknown, unknown>): string | undefined {
  return (field as ParentCounted)[PARENT_COUNTED];
}

/** The variables the @include/@skip of a selection set name (through its fragments, not below its fields). */
function conditionVariables(set: SelectionSetNode | undefined, fragments: GraphQLResolveInfo['fragments']): string[] {
  const names = new Set<string>();
  const seen = new Set<string>();
  const walk = (s: SelectionSetNode | undefined) => {
    for (const sel of s?.selections ?? []) {
      for (const d of sel.directives ?? [])
        for (const a of d.arguments ?? []) if (a.value.kind === Kind.VARIABLE) names.add(a.value.name.value);
      if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet);
      else if (sel.kind === Kind.FRAGMENT_SPREAD && !seen.has(sel.name.value)) {
        seen.add(sel.name.value);
        walk(fragments[sel.name.value]?.selectionSet);
      }
    }
  };
  walk(set);
  return [...names];
}

const included = (node: { directives?: readonly unknown[] }, variables: Record<string, unknown>): boolean => {
  if (!node.directives?.length) return true;
  const skip = getDirectiveValues(GraphQLSkipDirective, node as FieldNode, variables);
  if (skip?.if === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, node as FieldNode, variables);
  return include?.if !== false;
};

/** The parent-counted leaves `fieldNodes` select on an object of `type`, by response key (each counted once). */
function selectedLeaves(
  type: GraphQLObjectType,
  fieldNodes: readonly FieldNode[],
  info: GraphQLResolveInfo,
): CountedLeaf[] {
  const leaves = new Map<string, CountedLeaf>();
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode | undefined) => {
    for (const sel of set?.selections ?? []) {
      if (!included(sel, info.variableValues)) continue;
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value;
        if (leaves.has(key)) continue;
        if (sel.name.value === '__typename') {
          leaves.set(key, { property: '', key: key.length + 4 + type.name.length + 2 });
          continue;
        }
        const field = type.getFields()[sel.name.value];
        const property = field && parentCountedProperty(field);
        if (property !== undefined) leaves.set(key, { property, key: key.length + 4 });
        continue;
      }
      const fragment = sel.kind === Kind.INLINE_FRAGMENT ? sel : info.fragments[sel.name.value];
      if (!fragment) continue;
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        if (seen.has(sel.name.value)) continue;
        seen.add(sel.name.value);
      }
      const condition = fragment.typeCondition && info.schema.getType(fragment.typeCondition.name.value);
      if (condition && condition !== type && !(isAbstractType(condition) && info.schema.isSubType(condition, type)))
        continue;
      walk(fragment.selectionSet);
    }
  };
  for (const node of fieldNodes) walk(node.selectionSet);
  return [...leaves.values()];
}

/**
 * The parent-counted leaves of each place in a document: keyed by the place's field nodes (graphql-jit compiles a
 * document once and hands the same nodes to every run; the interpreting executor makes them per run), then by the
 * object's type and the values of the variables its @include/@skip name.
 */
const leavesByPlace = new WeakMap<readonly FieldNode[], { variables: string[]; byType: Map<string, CountedLeaf[]> }>();

function leavesFor(type: GraphQLObjectType, info: GraphQLResolveInfo): CountedLeaf[] {
  let place = leavesByPlace.get(info.fieldNodes);
  if (!place) {
    const variables = [
      ...new Set(info.fieldNodes.flatMap((n) => conditionVariables(n.selectionSet, info.fragments))),
    ].sort();
    place = { variables, byType: new Map() };
    leavesByPlace.set(info.fieldNodes, place);
  }
  let key = type.name;
  for (const v of place.variables)
    key += `\0${info.variableValues[v] === true ? 1 : info.variableValues[v] === false ? 0 : JSON.stringify(info.variableValues[v] ?? null)}`;
  let leaves = place.byType.get(key);
  if (!leaves) {
    if (place.byType.size >= 64) place.byType.clear(); // bounded: a place has few types and condition values
    leaves = selectedLeaves(type, info.fieldNodes, info);
    place.byType.set(key, leaves);
  }
  return leaves;
}

/** Counts into `budget` the parent-counted leaves of `value` (an object or nested lists of them) returned at `info`. */
function countObjects(
  budget: ResponseBudget,
  value: unknown,
  context: unknown,
  info: GraphQLResolveInfo,
  concrete?: GraphQLObjectType,
): void {
  if (value === null || value === undefined || budget.over) return;
  if (isPromise(value)) {
    // an item of a list resolved later: counted when it arrives (its errors are the executor's to report)
    value.then(
      (v) => countObjects(budget, v, context, info, concrete),
      () => {},
    );
    return;
  }
  if (typeof value !== 'object') return;
  if (
    Array.isArray(value) ||
    (typeof (value as Iterable<unknown>)[Symbol.iterator] === 'function' && !(value instanceof Map))
  ) {
    for (const item of value as Iterable<unknown>) countObjects(budget, item, context, info, concrete);
    return;
  }
  if (value instanceof Error) return;
  const type = concrete ?? objectTypeOf(value, context, info);
  if (!type) {
    budget.spend(sizeOf(value)); // an abstract type whose object's type is not known at once: the whole object
    return;
  }
  let bytes = 2;
  for (const leaf of leavesFor(type, info))
    bytes += leaf.key + (leaf.property === '' ? 0 : sizeOf((value as Record<string, unknown>)[leaf.property]));
  budget.spend(bytes);
}

/** The object type of a value of an abstract type, when its resolveType answers at once. */
function objectTypeOf(value: unknown, context: unknown, info: GraphQLResolveInfo): GraphQLObjectType | undefined {
  const named = getNamedType(info.returnType);
  if (isObjectType(named)) return named;
  if (!isAbstractType(named) || !named.resolveType) return undefined;
  const name = named.resolveType(value, context, info, named);
  if (typeof name !== 'string') return undefined;
  const type = info.schema.getType(name);
  return type && isObjectType(type) ? type : undefined;
}

/** What a field whose value holds objects answers once its operation is refused. */
function compositePlaceholder(field: GraphQLField<unknown, unknown>): { value: unknown } | undefined {
  if (!isNonNullType(field.type)) return { value: null };
  if (isListType(getNullableType(field.type))) return { value: [] };
  return undefined; // a non-null object: its own value (nothing below it is counted any more)
}

/**
 * Counts the bytes of every result of `schema` into its operation's budget (in place, once): leaves read straight
 * off their object by the field that returned it, other leaves by their own resolvers.
 */
export function countResponseBytes(schema: GraphQLSchema): GraphQLSchema {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const objectTypes = Object.values(schema.getTypeMap()).filter(
    (t): t is GraphQLObjectType => isObjectType(t) && !t.name.startsWith('__'),
  );
  // First where each leaf is counted: the fields that count objects read it when they run.
  for (const type of objectTypes) {
    if (roots.has(type)) continue;
    for (const field of Object.values(type.getFields())) {
      if (wrapped.has(field) || !isLeafType(getNamedType(field.type))) continue;
      const exposed = (field.extensions as { pothosExposedField?: unknown } | undefined)?.pothosExposedField;
      if (!field.resolve) (field as ParentCounted)[PARENT_COUNTED] = field.name;
      else if (typeof exposed === 'string') (field as ParentCounted)[PARENT_COUNTED] = exposed;
    }
  }
  for (const type of objectTypes) {
    for (const field of Object.values(type.getFields())) {
      if (wrapped.has(field) || parentCountedProperty(field) !== undefined) continue;
      wrapped.add(field);
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
      const named = getNamedType(field.type);
      if (!isLeafType(named)) {
        const concrete = isObjectType(named) ? named : undefined;
        const refused = compositePlaceholder(field);
        field.resolve = (source, args, context, info) => {
          const budget = (context as { [RESPONSE_BUDGET]?: ResponseBudget } | null | undefined)?.[RESPONSE_BUDGET];
          if (budget === undefined) return resolve(source, args, context, info);
          if (budget.over && refused) return refused.value;
          const value = resolve(source, args, context, info);
          if (isPromise(value))
            return Promise.resolve(value).then((v) => {
              countObjects(budget, v, context, info, concrete);
              return budget.over && refused ? refused.value : v;
            });
          countObjects(budget, value, context, info, concrete);
          return budget.over && refused ? refused.value : value;
        };
        continue;
      }
      const spent = placeholder(field);
      const key = field.name.length + 4; // "name": and a separator
      const count = (budget: ResponseBudget, value: unknown) => (budget.spend(key + sizeOf(value)) ? value : spent);
      field.resolve = (source, args, context, info) => {
        const budget = (context as { [RESPONSE_BUDGET]?: ResponseBudget } | null | undefined)?.[RESPONSE_BUDGET];
        if (budget === undefined) return resolve(source, args, context, info);
        if (budget.over) return spent;
        const value = resolve(source, args, context, info);
        return isPromise(value) ? Promise.resolve(value).then((v) => count(budget, v)) : count(budget, value);
      };
    }
  }
  return schema;
}
