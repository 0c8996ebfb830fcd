// Impossible numbers refused before anything runs, as the REST face refuses them: an Int argument or input field
// below its smallest value (src/input/numbers.ts: 1 for a required id such as `downloadId: Int!`, 0 for the rest) is
// `invalid_input` naming the field (`categoryId`, `input.downloadId`), 400 under either media type, whether the
// number is written in the document or sent as a variable. (Numbers beyond 32 bits never get here: graphql-js
// refuses them while checking the document or its variables.)
import {
  type DocumentNode,
  type GraphQLInputType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  type GraphQLSchema,
  Kind,
  TypeInfo,
  valueFromAST,
  type ValueNode,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { invalidInput } from '../errors.js';
import { smallestWholeNumber, wholeNumberRange } from '../input/numbers.js';

/** The first Int in `value` (of `type`) below its smallest value, as [field path, value, smallest]. */
function firstBelow(
  type: GraphQLInputType,
  value: unknown,
  field: string,
  name: string,
): [string, number, number] | undefined {
  if (value === null || value === undefined) return undefined;
  const required = type instanceof GraphQLNonNull;
  const inner = required ? (type as GraphQLNonNull<GraphQLInputType>).ofType : type;
  if (inner instanceof GraphQLList) {
    if (!Array.isArray(value)) return firstBelow(inner.ofType, value, field, name);
    for (const item of value) {
      const found = firstBelow(inner.ofType, item, field, name);
      if (found) return found;
    }
    return undefined;
  }
  if (inner instanceof GraphQLInputObjectType) {
    for (const [key, f] of Object.entries(inner.getFields())) {
      const found = firstBelow(f.type, (value as Record<string, unknown>)[key], `${field}.${key}`, key);
      if (found) return found;
    }
    return undefined;
  }
  if ('name' in inner && inner.name === 'Int' && typeof value === 'number') {
    const smallest = smallestWholeNumber(name, required);
    if (value < smallest) return [field, value, smallest];
  }
  return undefined;
}

/** An argument of a document that can carry an Int: its type, name and value as written (a literal or variables). */
interface ArgumentCheck {
  type: GraphQLInputType;
  name: string;
  value: ValueNode;
}

/**
 * The arguments of each document, found once per schema and document (walking a document with its types cost about
 * 4% of the service's CPU under a load of short reads when it was done on every request; documents are parsed once
 * and kept, so the same object comes back).
 */
const argumentsOf = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly ArgumentCheck[]>>();

function argumentChecks(schema: GraphQLSchema, document: DocumentNode): readonly ArgumentCheck[] {
  let bySchema = argumentsOf.get(schema);
  if (!bySchema) {
    bySchema = new WeakMap();
    argumentsOf.set(schema, bySchema);
  }
  const known = bySchema.get(document);
  if (known) return known;
  const typeInfo = new TypeInfo(schema);
  const checks: ArgumentCheck[] = [];
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const arg = typeInfo.getArgument();
        if (arg) checks.push({ type: arg.type, name: arg.name, value: node.value });
        return false;
      },
      [Kind.DIRECTIVE]: () => false,
    }),
  );
  bySchema.set(document, checks);
  return checks;
}

/** The first impossible number among the arguments of `document`'s operations and fragments, if any. */
export function impossibleNumber(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
): [string, number, number] | undefined {
  for (const check of argumentChecks(schema, document)) {
    const found = firstBelow(check.type, valueFromAST(check.value, check.type, variables), check.name, check.name);
    if (found) return found;
  }
  return undefined;
}

export function wholeNumbersPlugin(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const found = impossibleNumber(args.schema, args.document, args.variableValues ?? undefined);
      if (!found) return;
      const [field, value, smallest] = found;
      setResultAndStopExecution({
        errors: [invalidInput(field, `${field} must be ${wholeNumberRange(smallest)}, got ${value}.`)],
      });
    },
  };
}
