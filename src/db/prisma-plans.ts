// Prisma's query plans, kept. Prisma 6 with the JavaScript engine compiles each call (its JSON query, the values
// written into it) to a plan in WebAssembly and keeps none: about half a millisecond a call, and most calls repeat a
// text seen before (the permission tables reloaded, a rule's lookup of the same row, the same write shape with the
// same values). On the authorization matrix 61% of 13,000 compilations, and on the race tests 60% of 7,000, were of a
// text already compiled; compiling was 18% of their CPU.
//
// Each compiler (one per PrismaClient: plans depend on the database's connection info) keeps its last PLANS_KEPT
// plans by text. A plan is handed out as a copy (a few hundredths of a compilation), so that nothing the
// executor might do to one can reach the next call. A text that fails to compile is not kept: it throws each time,
// as before; so does a plan that cannot be copied.
import { QueryCompiler } from '@prisma/client/runtime/query_compiler_bg.postgresql.mjs';

/** Plans kept per compiler, the least recently used dropped first. */
export const PLANS_KEPT = 1000;

/** What the plans saved, for tests and benchmarks: compilations run and calls answered from a kept plan. */
export const planStats = { compiled: 0, reused: 0 };

type Compile = (this: object, query: string) => unknown;

class Uncopyable extends Error {}

/**
 * A deep copy of a plan: what the compiler returns is plain data (objects, arrays, Maps, primitives). Written out
 * rather than structuredClone, which cost about a fifth of a compilation per call. Anything else throws Uncopyable.
 */
function copyOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (value instanceof Map) {
    const out = new Map();
    for (const [k, v] of value) out.set(k, copyOf(v));
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new Uncopyable();
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) out[k] = copyOf((value as Record<string, unknown>)[k]);
  return out;
}

const kept = new WeakMap<object, Map<string, unknown>>();

/** `compile` keeping its plans by text, per compiler (`this`). */
export function keeping(compile: Compile, limit = PLANS_KEPT): Compile {
  return function (this: object, query: string) {
    let plans = kept.get(this);
    if (!plans) {
      plans = new Map();
      kept.set(this, plans);
    }
    const plan = plans.get(query);
    if (plan !== undefined) {
      plans.delete(query);
      plans.set(query, plan);
      planStats.reused++;
      return copyOf(plan);
    }
    const fresh = compile.call(this, query);
    planStats.compiled++;
    let copy: unknown;
    try {
      copy = copyOf(fresh);
    } catch (err) {
      if (err instanceof Uncopyable) return fresh; // a plan that cannot be copied is not kept
      throw err;
    }
    if (plans.size >= limit) plans.delete(plans.keys().next().value as string);
    plans.set(query, copy);
    return fresh;
  };
}

const proto = (QueryCompiler as unknown as { prototype?: { compile?: Compile } }).prototype;
// Once per process, and only where the compiler is the one this was written against (Prisma 6.19): a later Prisma
// whose compiler differs goes on compiling each call, as it did.
if (proto && typeof proto.compile === 'function' && !Object.hasOwn(proto, 'keepsPlans')) {
  proto.compile = keeping(proto.compile);
  Object.defineProperty(proto, 'keepsPlans', { value: true });
}
