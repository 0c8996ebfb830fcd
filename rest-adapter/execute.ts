// How a REST route's fixed document is executed. Each document is compiled with graphql-jit the first time its
// route is called (one JavaScript function per document: no per-field interpretation of the AST on each request) and
// the compiled query is kept. A document graphql-jit cannot compile runs on @graphql-tools/executor, the interpreting
// executor. graphql-jit takes no abort signal, so the deadline is kept by racing the result against it (beforeDeadline
// in src/graphql/limits.ts): REST documents are fixed and their pages bounded, so work that outlives its deadline ends soon.
import type { DocumentNode, ExecutionResult, GraphQLSchema } from 'graphql';
import { normalizedExecutor } from '@graphql-tools/executor';
import { compileOperation } from '../src/graphql/compiled.js';
import type { OperationSignal } from '../src/db/operation-signal.js';

export type RunOperation = (
  variableValues: Record<string, unknown>,
  contextValue: unknown,
  signal: OperationSignal,
) => Promise<ExecutionResult>;

/** Runs `document` with graphql-jit, compiled on first use; `onFallback` hears why a document could not be compiled. */
export function routeOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  onFallback: (reason: unknown) => void,
): RunOperation {
  // The executor reads the signal's `aborted`, `reason` and 'abort' listeners only (as the deadline's signal gives).
  const interpreted: RunOperation = async (variableValues, contextValue, signal) =>
    normalizedExecutor({
      schema,
      document,
      variableValues,
      contextValue,
      signal: signal as AbortSignal,
    }) as ExecutionResult;
  let run: RunOperation | undefined;
  const compile = (): RunOperation => {
    const query = compileOperation(schema, document, undefined, onFallback);
    if (!query) return interpreted;
    // async: a synchronous throw becomes a rejection, like the interpreting executor's.
    return async (variableValues, contextValue) => query(undefined, contextValue, variableValues);
  };
  return (variableValues, contextValue, signal) => {
    run ??= compile();
    return run(variableValues, contextValue, signal);
  };
}
