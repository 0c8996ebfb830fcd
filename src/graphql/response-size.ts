// The response size limit (GRAPHQL_MAX_RESPONSE_BYTES): the bytes of an operation's result are counted as its leaf
// values (scalars, enums, lists of them) are resolved, on both executors (graphql-jit calls the same resolvers), and
// the operation stops once the running total passes the limit: 400 `operation_too_expensive`, `params { kind:
// "response_size", limit }`. Objects add little of their own (their number is bounded by the cost limit); what makes a
// result large is its text, and text is a leaf.
//
// Each leaf's resolver is wrapped once, in place. An operation counts only when its context carries a budget (set by
// operationLimitsPlugin on /graphql and by the REST adapter per route): other callers of the schema pay one property
// read. Past the limit the operation's answer is decided (its deadline is aborted with the refusal); the leaves that
// still resolve (graphql-jit takes no abort signal and runs to its end) answer a cheap placeholder, so the abandoned
// run neither keeps text nor makes an error object per leaf.
import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  isEnumType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLLeafType,
  type GraphQLSchema,
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

/** Wraps every leaf field's resolver of `schema` (in place, once) to count its value into the operation's budget. */
export function countResponseBytes(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (wrapped.has(field) || !isLeafType(getNamedType(field.type))) continue;
      wrapped.add(field);
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
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
