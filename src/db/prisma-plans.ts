// Prisma's query plans, kept. Prisma 6 with the JavaScript engine compiles each call (its JSON query, the values
// written into it) to a plan in WebAssembly and keeps none: about half a millisecond a call.
//
// Each compiler (one per PrismaClient: plans depend on the database's connection info) keeps its last PLANS_KEPT
// plans, two ways:
//
// - By text: a call whose query text was compiled before gets that plan again.
// - By shape: most calls repeat a shape with other values (a row read by its id, a title written). The query's
//   values inside its arguments (whole numbers other than `take` and `skip`, strings other than orders, field lists
//   and modes, and dates) are replaced by markers, that template is compiled once, and each call of the shape gets the
//   template's plan with its own values put where the markers are. On the authorization matrix and the invariants,
//   13,500 compilations were of 5,300 texts and 192 shapes.
//
// A shape is used only once its first call compiled both ways to the same plan, and only when its template's plan
// holds the markers where values go: in a statement's parameters (whole, or inside a larger string: a LIKE pattern is
// `%value%`) or as a value of their own, never in SQL text; other shapes' calls compile as before. Equal values share
// a marker, as Prisma decides by their equality at times. A template that does not compile (a string in an enum's
// place) is tried again with its strings as written. With `planChecks.everyCall` every call is compiled both ways and
// a disagreement throws: the whole test suite agreed so. A plan is handed out as a copy, so that nothing the executor
// might do to one can reach the next call. A text that fails to compile is not kept: it throws each time, as before;
// so does a plan that cannot be copied.
import { isDeepStrictEqual } from 'node:util';
import { QueryCompiler } from '@prisma/client/runtime/query_compiler_bg.postgresql.mjs';

/** Plans kept per compiler, the least recently used dropped first. */
export const PLANS_KEPT = 1000;

/** What the plans saved, for tests and benchmarks: compilations run, calls answered by text and by shape. */
export const planStats = { compiled: 0, reused: 0, fromShape: 0 };

type Compile = (this: object, query: string) => unknown;

class Uncopyable extends Error {}

/**
 * A deep copy of a plan: what the compiler returns is plain data (objects, arrays, Maps, primitives). Written out
 * rather than structuredClone, which cost about a fifth of a compilation per call. Anything else throws Uncopyable.
 * `leaf` copies what is below the top (filled() passes itself, to put values in as it copies).
 */
function copyOf(value: unknown, leaf: (v: unknown) => unknown = copyOf): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((x) => leaf(x));
  if (value instanceof Map) {
    const out = new Map();
    for (const [k, v] of value) out.set(k, leaf(v));
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new Uncopyable();
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) out[k] = leaf((value as Record<string, unknown>)[k]);
  return out;
}

interface Kept {
  /** Plans by query text. */
  texts: Map<string, unknown>;
  /** By template text: its plan (with markers), whether a call compiled both ways agreed, or null: not usable. */
  shapes: Map<string, { plan: unknown; trusted: boolean } | null>;
}

const kept = new WeakMap<object, Kept>();

/** Checks that tests can turn on: every call answered from a shape is compiled as well, and must agree. */
export const planChecks = { everyCall: false };

/** The marker of a whole-number value (in the Int range, so that it passes for any integer column). */
const INT_BASE = 1_987_650_000;
const MAX_SLOTS = 10_000;
/** The marker of a string value: private-use characters around its slot number. */
const STR_OPEN = '\uE000';
const STR_CLOSE = '\uE001';
const STR_MARKER = /\uE000(\d+)\uE001/g;
/** The marker of a point in time: a second past 1901-01-01T00:00:00.001Z per slot, as the client writes dates. */
const DATE_BASE = Date.UTC(1901, 0, 1, 0, 0, 0, 1);
const DATE_MARKER = /^1901-01-01T\d\d:\d\d:\d\d\.001Z$/;
/** A date as the client writes it (toISOString): only these are replaced by markers. */
const ISO_DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function dateMarker(slot: number): string {
  return new Date(DATE_BASE + slot * 1000).toISOString();
}

/** The slot of a date marker, or -1. */
function dateSlot(text: string, slots: number): number {
  if (!DATE_MARKER.test(text)) return -1;
  const slot = (Date.parse(text) - DATE_BASE) / 1000;
  return slot < slots ? slot : -1;
}
/** Keys whose numbers change the statement's shape, not a parameter (a negative `take` reverses the order). */
const NUMBER_AS_WRITTEN = new Set(['take', 'skip']);
/** Keys whose strings name fields, directions or modes: part of the shape. */
const STRING_AS_WRITTEN = new Set(['orderBy', 'distinct', 'by', 'mode', 'sort', 'nulls', 'select', 'selection']);

/**
 * The query with its values replaced by markers (strings only when `strings`), and the values in slot order (a date's
 * as the text the client wrote).
 */
function template(query: unknown, strings: boolean): { text: string; values: (number | string)[] } | null {
  const values: (number | string)[] = [];
  // Equal values share a marker: Prisma decides by their equality at times (an upsert whose create writes the value
  // its where names runs as one INSERT … ON CONFLICT), so a template keeps which values are equal.
  const slots = new Map<number | string, number>();
  const dateSlots = new Map<string, number>();
  const slot = (value: number | string, of = slots): number => {
    let i = of.get(value);
    if (i === undefined) {
      i = values.length;
      values.push(value);
      of.set(value, i);
    }
    return i;
  };
  let tooMany = false;
  const walk = (node: unknown, inArguments: boolean, asWritten: boolean): unknown => {
    if (Array.isArray(node)) return node.map((x) => walk(x, inArguments, asWritten));
    if (node !== null && typeof node === 'object') {
      // A tagged value ({ $type: 'DateTime', value }) is kept as written, but for a date as the client writes it.
      if ('$type' in node) {
        const { $type, value } = node as { $type: unknown; value: unknown };
        if ($type !== 'DateTime' || typeof value !== 'string' || !ISO_DATE.test(value) || !inArguments || asWritten)
          return node;
        if (values.length >= MAX_SLOTS) {
          tooMany = true;
          return node;
        }
        return { ...node, value: dateMarker(slot(value, dateSlots)) };
      }
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(node)) {
        const within = inArguments || k === 'arguments';
        out[k] = walk(v, within, within && (asWritten || STRING_AS_WRITTEN.has(k) || NUMBER_AS_WRITTEN.has(k)));
      }
      return out;
    }
    if (!inArguments || asWritten) return node;
    if (values.length >= MAX_SLOTS) {
      tooMany = true;
      return node;
    }
    // Only numbers any integer column takes: a larger one is left to the compiler, which refuses it for an Int.
    if (typeof node === 'number' && Number.isInteger(node) && node >= -2_147_483_648 && node <= 2_147_483_647)
      return INT_BASE + slot(node);
    if (strings && typeof node === 'string') return `${STR_OPEN}${slot(node)}${STR_CLOSE}`;
    return node;
  };
  const parsed = walk(query, false, false);
  if (tooMany || values.length === 0) return null;
  return { text: JSON.stringify(parsed), values };
}

/**
 * Whether a template's plan holds its markers only where values go: an integer marker as a whole number or a whole
 * string (a parameter's text), a string marker only in a statement's parameters or a value node, never in SQL text.
 */
function markersInPlace(plan: unknown, slots: number): boolean {
  let ok = true;
  const visit = (node: unknown, key: string, underParameters: boolean): void => {
    if (!ok) return;
    if (typeof node === 'string') {
      if (node.includes(STR_OPEN) || node.includes(STR_CLOSE)) {
        const whole = /^\uE000\d+\uE001$/.test(node);
        if (!(underParameters || (whole && (key === 'args' || key === 'value')))) ok = false;
      }
      if (/1987\d{6}/.test(node) && !(isIntMarker(Number(node), slots) && String(Number(node)) === node)) ok = false;
      if (node.includes('1901-01-01T')) {
        if (!(dateSlot(node, slots) >= 0 && (underParameters || key === 'args' || key === 'value'))) ok = false;
      }
      return;
    }
    if (typeof node === 'number') return;
    if (Array.isArray(node)) {
      for (const x of node) visit(x, key, underParameters);
      return;
    }
    if (node instanceof Map) {
      for (const [k, v] of node) {
        if (typeof k !== 'string' || k.includes(STR_OPEN) || /1987\d{6}|1901-01-01T/.test(k)) ok = false;
        visit(v, String(k), underParameters);
      }
      return;
    }
    if (node !== null && typeof node === 'object') {
      // A statement's parameters: the `args` beside its `fragments` (templateSql) or its `sql` (rawSql).
      const statement = 'fragments' in node || 'sql' in node;
      for (const [k, v] of Object.entries(node)) {
        if (k.includes(STR_OPEN) || /1987\d{6}|1901-01-01T/.test(k)) ok = false;
        visit(v, k, statement && k === 'args');
      }
    }
  };
  visit(plan, '', false);
  return ok;
}

function isIntMarker(n: number, slots: number): boolean {
  return Number.isInteger(n) && n >= INT_BASE && n < INT_BASE + slots;
}

/** A copy of a template's plan with the call's values where the markers are. */
function filled(plan: unknown, values: (number | string)[]): unknown {
  const put = (value: unknown): unknown => {
    if (typeof value === 'number') return isIntMarker(value, values.length) ? values[value - INT_BASE] : value;
    if (typeof value === 'string') {
      if (value.includes(STR_OPEN)) return value.replace(STR_MARKER, (_, i: string) => String(values[Number(i)]));
      if (value.length === 10 && value.startsWith('1987')) {
        const n = Number(value);
        if (isIntMarker(n, values.length)) return String(values[n - INT_BASE]);
      }
      if (value.length === 24 && value.startsWith('1901-01-01T')) {
        const d = dateSlot(value, values.length);
        if (d >= 0) return values[d];
      }
      return value;
    }
    return copyOf(value, put);
  };
  return put(plan);
}

function keptBy(compiler: object): Kept {
  let k = kept.get(compiler);
  if (!k) {
    k = { texts: new Map(), shapes: new Map() };
    kept.set(compiler, k);
  }
  return k;
}

function remember<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  if (map.size >= limit) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

/** `compile` keeping its plans by text and by shape, per compiler (`this`). */
export function keeping(compile: Compile, limit = PLANS_KEPT): Compile {
  return function (this: object, query: string) {
    const { texts, shapes } = keptBy(this);
    const plan = texts.get(query);
    if (plan !== undefined) {
      texts.delete(query);
      texts.set(query, plan);
      planStats.reused++;
      return copyOf(plan);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(query);
    } catch {
      parsed = undefined;
    }
    // The shape with strings as markers, else with only its numbers as markers.
    for (const strings of [true, false]) {
      const t = parsed === undefined ? null : template(parsed, strings);
      if (!t) break;
      let shape = shapes.get(t.text);
      if (shape === undefined) {
        shape = null;
        try {
          const made = compile.call(this, t.text);
          planStats.compiled++;
          const copy = copyOf(made);
          if (markersInPlace(copy, t.values.length)) shape = { plan: copy, trusted: false };
        } catch {
          // A template that does not compile, or a plan that cannot be copied: the shape is not used.
        }
        remember(shapes, t.text, shape, limit);
      } else {
        shapes.delete(t.text);
        shapes.set(t.text, shape);
      }
      if (shape === null) continue;
      const answer = filled(shape.plan, t.values);
      if (shape.trusted && !planChecks.everyCall) {
        planStats.fromShape++;
        return answer;
      }
      // The first call of a shape (or every call, when checked) compiles its own text as well: the two must agree.
      const own = compileKeeping.call(this, compile, texts, query, limit);
      if (!isDeepStrictEqual(own, answer)) {
        if (planChecks.everyCall) throw new Error(`a plan filled in from its shape differs from its own: ${query}`);
        shapes.set(t.text, null);
        return own;
      }
      shape.trusted = true;
      return own;
    }
    return compileKeeping.call(this, compile, texts, query, limit);
  };
}

/** Compiles a text and keeps its plan by text. */
function compileKeeping(
  this: object,
  compile: Compile,
  texts: Map<string, unknown>,
  query: string,
  limit: number,
): unknown {
  const fresh = compile.call(this, query);
  planStats.compiled++;
  let copy: unknown;
  try {
    copy = copyOf(fresh);
  } catch (err) {
    if (err instanceof Uncopyable) return fresh; // a plan that cannot be copied is not kept
    throw err;
  }
  remember(texts, query, copy, limit);
  return fresh;
}

const proto = (QueryCompiler as unknown as { prototype?: { compile?: Compile } }).prototype;
// Once per process, and only where the compiler is the one this was written against (Prisma 6.19): a later Prisma
// whose compiler differs goes on compiling each call, as it did.
if (proto && typeof proto.compile === 'function' && !Object.hasOwn(proto, 'keepsPlans')) {
  proto.compile = keeping(proto.compile);
  Object.defineProperty(proto, 'keepsPlans', { value: true });
}
