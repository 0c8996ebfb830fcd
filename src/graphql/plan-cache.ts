// The Prisma plugin's query plans, kept per operation. For every field that loads rows (a `prismaField`, and each
// `queryFromInfo` of a list resolver), Pothos walks the operation's selection under the field and plans what to load
// (@pothos/selection-mapper's Plan.fromInfo); on a short read that walk was 5-7% of the service's CPU, repeated
// identically for every request of the same document. A plan depends only on the schema, the selection (the field's
// AST nodes, and through them the fragments of the same document), the options it was asked with and the values of
// the variables used under the field (arguments of nested fields, @include/@skip/@defer conditions): never on the
// field's own arguments (its resolver reads those), nor on the request context, since none of this schema's
// `select`/`query` callbacks reads the context (they take their field arguments only; a callback that needs the
// context must not be added without turning this off for its field: test/plan-cache.test.ts fails on one). So a
// settled plan is kept under those, and a request with the same ones plays it again: the query and the loader mappings
// it records on the request's context are what a fresh plan would give (the plan is played afresh, or its settled
// play reused, exactly as on the first request; only the walk is skipped).
import { Plan } from '@pothos/selection-mapper';
import { Kind, visit, type FieldNode, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';

interface FromInfoOptions {
  context: object;
  info: GraphQLResolveInfo;
  typeName?: string;
  path?: readonly string[];
  paths?: readonly (readonly string[])[];
  skipDeferredFragments?: boolean;
  initial?: unknown;
}
type FromInfo = (adapter: object, options: FromInfoOptions) => unknown;

interface Kept {
  adapter: object;
  schema: GraphQLSchema;
  fieldNodes: readonly FieldNode[];
  plan: object;
}

/** Variants of one field's plan kept (by options and variable values); past it the field's are dropped together. */
const VARIANTS_PER_FIELD = 64;

const plans = new WeakMap<FieldNode, Map<string, Kept>>();
const variablesUnder = new WeakMap<FieldNode, readonly string[]>();

/** The names of the variables used under the field (its selection, through fragments), not in its own arguments. */
function variablesOf(info: GraphQLResolveInfo): readonly string[] {
  const first = info.fieldNodes[0]!;
  let names = variablesUnder.get(first);
  if (names) return names;
  const found = new Set<string>();
  const seen = new Set<string>();
  const walk = (node: Parameters<typeof visit>[0]) =>
    visit(node, {
      Variable(v) {
        found.add(v.name.value);
      },
      FragmentSpread(s) {
        const name = s.name.value;
        const fragment = info.fragments[name];
        if (!seen.has(name) && fragment) {
          seen.add(name);
          walk(fragment);
        }
      },
    });
  for (const node of info.fieldNodes) {
    for (const d of node.directives ?? []) walk(d);
    if (node.selectionSet) walk(node.selectionSet);
  }
  names = [...found].sort();
  variablesUnder.set(first, names);
  return names;
}

function sameNodes(a: readonly FieldNode[], b: readonly FieldNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const isThenable = (v: unknown): boolean => typeof (v as { then?: unknown } | null)?.then === 'function';

/** Plan.fromInfo, answering from the plans kept for the same field, options and variable values. */
export function keepPlans(): void {
  const target = Plan as unknown as { fromInfo: FromInfo & { kept?: true } };
  if (target.fromInfo.kept) return;
  const original = target.fromInfo.bind(Plan) as FromInfo;
  const cached: FromInfo & { kept?: true } = (adapter, options) => {
    const { info } = options;
    const first = info?.fieldNodes?.[0];
    if (!first || first.kind !== Kind.FIELD || options.initial !== undefined) return original(adapter, options);
    const values = info.variableValues;
    let key: string;
    try {
      key = JSON.stringify([
        info.parentType.name,
        info.fieldName,
        options.typeName ?? null,
        options.paths ?? null,
        options.path ?? null,
        options.skipDeferredFragments ?? null,
        variablesOf(info).map((name) => (Object.hasOwn(values, name) ? [values[name]] : [])),
      ]);
    } catch {
      return original(adapter, options); // a value JSON cannot write (a BigInt): planned as it comes
    }
    let forField = plans.get(first);
    const kept = forField?.get(key);
    if (
      kept &&
      kept.adapter === adapter &&
      kept.schema === info.schema &&
      sameNodes(kept.fieldNodes, info.fieldNodes)
    ) {
      // The kept plan, seen with this request's context and info: its query() records the mappings on them.
      return Object.create(kept.plan, { context: { value: options.context }, info: { value: info } });
    }
    const plan = original(adapter, options);
    if (!plan || isThenable(plan)) return plan; // nothing selected, or planned asynchronously: not kept
    if (!forField) {
      forField = new Map();
      plans.set(first, forField);
    }
    if (forField.size >= VARIANTS_PER_FIELD) forField.clear();
    forField.set(key, { adapter, schema: info.schema, fieldNodes: [...info.fieldNodes], plan: plan as object });
    return plan;
  };
  cached.kept = true;
  target.fromInfo = cached;
}
