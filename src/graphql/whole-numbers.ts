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

/** The first impossible number among the arguments of `document`'s operations and fragments, if any. */
export function impossibleNumber(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
): [string, number, number] | undefined {
  const typeInfo = new TypeInfo(schema);
  let found: [string, number, number] | undefined;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        if (found) return false;
        const arg = typeInfo.getArgument();
        if (!arg) return false;
        const value = valueFromAST(node.value, arg.type, variables);
        found = firstBelow(arg.type, value, arg.name, arg.name);
        return false;
      },
      [Kind.DIRECTIVE]: () => false,
    }),
  );
  return found;
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
