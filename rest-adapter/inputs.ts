// Request fields in, GraphQL variables out. Driven by the operation's variable types, so a new route
// needs no code here: path, query and body fields are matched by snake_case name, booleans accept
// 1/0/true/false, integers must be whole numbers in range (minimumOf), enums match case-insensitively, `name[]` makes a list,
// and the fields of an input-object variable are gathered the same way.
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  type GraphQLScalarType,
  typeFromAST,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type VariableDefinitionNode,
} from 'graphql';
import { ApiError, invalidInput, requiredMissing } from '../src/errors.js';
import { badText } from '../src/input/text.js';
import { MAX_INT, smallestWholeNumber, wholeNumberRange } from '../src/input/numbers.js';

/** A value handed to a custom scalar untouched (an uploaded file). */
export class Opaque {
  constructor(readonly value: unknown) {}
}

export type Raw = string | number | boolean | null | Opaque | Repeated | Raw[] | { [k: string]: Raw };
export type RawFields = Map<string, Raw>;

const snakeNames = new Map<string, string>();
/** camelCase → snake_case, memoised: every request converts the same few names (variables, input fields, keys). */
export function toSnake(name: string): string {
  let snake = snakeNames.get(name);
  if (snake === undefined) {
    snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snakeNames.size >= 10_000) snakeNames.clear(); // bounded: names come from the schema and the route documents
    snakeNames.set(name, snake);
  }
  return snake;
}

/**
 * A field sent more than once without `[]` (`hash=a&hash=b`): a list variable takes every value, any other the last
 * one (as PHP reads such a query string).
 */
export class Repeated {
  constructor(readonly values: string[]) {}
}

/** Adds URL-encoded pairs (query string or form body); `tags[]=a&tags[]=b` becomes the list `tags`. */
export function addPairs(into: RawFields, pairs: Iterable<[string, string]>): void {
  for (const [key, value] of pairs) {
    if (key.endsWith('[]')) {
      const name = key.slice(0, -2);
      const prev = into.get(name);
      into.set(name, Array.isArray(prev) ? [...prev, value] : [value]);
    } else {
      const prev = into.get(key);
      if (prev instanceof Repeated) into.set(key, new Repeated([...prev.values, value]));
      else if (typeof prev === 'string') into.set(key, new Repeated([prev, value]));
      else into.set(key, value);
    }
  }
}

/**
 * The smallest integer a field takes: 1 for a required identifier (`…_id`, non-null: it must name a row), else 0
 * (counts, sort keys, and optional ids where 0 means "none", such as parent_category_id and prefix_id).
 */
export function minimumOf(field: string, type: GraphQLInputType): number {
  return smallestWholeNumber(field, type instanceof GraphQLNonNull);
}

function coerce(
  type: GraphQLInputType,
  raw: Raw,
  field: string,
  missing: string[],
  min = minimumOf(field, type),
): unknown {
  if (type instanceof GraphQLNonNull) {
    if (raw === null) throw invalidInput(field, `${field} cannot be empty.`);
    return coerce(type.ofType, raw, field, missing, min);
  }
  if (raw === null) return null;
  if (raw instanceof Opaque) return raw.value;
  if (raw instanceof Repeated) {
    return coerce(
      type,
      type instanceof GraphQLList ? raw.values : raw.values[raw.values.length - 1]!,
      field,
      missing,
      min,
    );
  }
  if (typeof raw === 'string') {
    const why = badText(raw);
    if (why) throw invalidInput(field, `${field} ${why}.`);
  }
  if (type instanceof GraphQLList) {
    const items = Array.isArray(raw) ? raw : [raw];
    return items.map((item) => coerce(type.ofType, item, field, missing));
  }
  if (Array.isArray(raw)) throw invalidInput(field, `${field} takes a single value, not a list.`);
  if (type instanceof GraphQLInputObjectType) {
    if (typeof raw !== 'object') throw invalidInput(field, `${field} must be an object.`);
    return gather(type, new Map(Object.entries(raw)), missing, `${field}.`);
  }
  if (type instanceof GraphQLEnumType) {
    const wanted = typeof raw === 'object' ? '' : String(raw).toUpperCase();
    const value = type.getValues().find((v) => v.name === wanted);
    if (!value || typeof raw === 'object') {
      const allowed = type
        .getValues()
        .map((v) => v.name.toLowerCase())
        .join(', ');
      throw invalidInput(field, `${field} must be one of: ${allowed}; got "${shown(raw)}".`);
    }
    return value.name;
  }
  const scalar = type as GraphQLScalarType;
  switch (scalar.name) {
    case 'Int': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isInteger(n) || n < min || n > MAX_INT) {
        throw invalidInput(field, `${field} must be ${wholeNumberRange(min)}, got "${shown(raw).slice(0, 40)}".`);
      }
      return n;
    }
    case 'Boolean': {
      if (typeof raw === 'boolean') return raw;
      const s = typeof raw === 'object' ? '' : String(raw).trim().toLowerCase();
      if (s === '1' || s === 'true') return true;
      if (s === '0' || s === 'false') return false;
      throw invalidInput(field, `${field} must be 1 or 0 (or true/false), got "${shown(raw).slice(0, 40)}".`);
    }
    case 'String':
      if (typeof raw === 'object') throw invalidInput(field, `${field} must be text.`);
      return String(raw);
    default: {
      if (typeof raw === 'object') throw invalidInput(field, `${field} has the wrong shape.`);
      try {
        scalar.parseValue(raw);
      } catch (err) {
        throw invalidInput(field, err instanceof Error ? `${field}: ${err.message}` : `${field} is malformed.`);
      }
      return raw;
    }
  }
}

function gather(type: GraphQLInputObjectType, raw: RawFields, missing: string[], prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of Object.values(type.getFields())) {
    const name = toSnake(f.name);
    if (raw.has(name)) {
      out[f.name] = coerce(f.type, raw.get(name)!, prefix + name, missing);
    } else if (f.type instanceof GraphQLNonNull && f.defaultValue === undefined) {
      missing.push(prefix + name);
    }
  }
  return out;
}

const variableTypes = new WeakMap<GraphQLSchema, WeakMap<VariableDefinitionNode, GraphQLInputType | undefined>>();
/** The schema's type of a variable of a route's document, looked up once per definition. */
function variableType(schema: GraphQLSchema, def: VariableDefinitionNode): GraphQLInputType | undefined {
  let types = variableTypes.get(schema);
  if (!types) {
    types = new WeakMap();
    variableTypes.set(schema, types);
  }
  if (!types.has(def)) types.set(def, typeFromAST(schema, def.type) as GraphQLInputType | undefined);
  return types.get(def);
}

/**
 * Builds the variables of `operation` from the request's fields. A variable of input-object type gathers its
 * fields from the same flat set of request fields (the spec's form bodies are flat).
 * Throws 400 required_input_missing (all missing names at once) or 400 invalid_input (params.field).
 */
export function toVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  raw: RawFields,
): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  const missing: string[] = [];
  for (const def of operation.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    const type = variableType(schema, def);
    if (!type) throw new ApiError('server_error', `Operation variable $${name} has an unknown type.`);
    if (name === 'full') {
      variables.full = raw.get('with') === 'full';
      continue;
    }
    const base = type instanceof GraphQLNonNull ? type.ofType : type;
    if (base instanceof GraphQLInputObjectType) {
      variables[name] = gather(base, raw, missing);
      continue;
    }
    const field = toSnake(name);
    if (raw.has(field)) variables[name] = coerce(type, raw.get(field)!, field, missing);
    else if (type instanceof GraphQLNonNull && !def.defaultValue) missing.push(field);
  }
  if (missing.length > 0) throw requiredMissing(missing);
  return variables;
}

/**
 * A value as an error message quotes it: a primitive as text, anything else as JSON. String() would throw for an
 * object without a usable toString (`{"toString": null}` in a JSON body), which must answer 400, not 500.
 */
function shown(raw: unknown): string {
  if (raw === null || typeof raw !== 'object') return String(raw);
  try {
    return JSON.stringify(raw) ?? 'an object';
  } catch {
    return Array.isArray(raw) ? 'a list' : 'an object';
  }
}
