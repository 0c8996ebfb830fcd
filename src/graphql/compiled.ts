// Compiled execution of /graphql queries and mutations. graphql-jit turns an operation into one JavaScript function,
// so a request no longer walks the document field by field as the interpreting executor (@graphql-tools/executor)
// does. Compiling costs far more CPU than one interpreted run, so an operation is compiled on its document's second
// use only: a client sending endless distinct documents costs the server what it did before (one interpreted run
// each, plus an entry in a bounded cache). Yoga's parse cache hands out the same DocumentNode for the same text, so
// the cache is keyed by the document object (and the operation's name), least recently used first out.
//
// What the interpreter does the same way stays with it: subscriptions, operations graphql-jit cannot compile (the
// reason is logged once per operation), and variables that do not coerce (their errors are the interpreter's own).
// graphql-jit takes no abort signal: the deadline is raced by operationLimitsPlugin (src/graphql/limits.ts).
import {
  BREAK,
  GraphQLError,
  getOperationAST,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type SourceLocation,
  type VariableDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { getVariableValues } from '@graphql-tools/executor';
import type { Plugin } from 'graphql-yoga';
import type { OperationSignal } from '../db/operation-signal.js';

/** Documents kept compiled. A compiled operation is a few kilobytes of code; 500 cover any real client's set. */
export const COMPILED_DOCUMENTS = 500;

interface Operation {
  /** Compiled on second use; null when graphql-jit cannot compile it (it stays interpreted). */
  query?: CompiledQuery['query'] | null;
  variables: readonly VariableDefinitionNode[];
}

export type ExecutionMode = 'compiled' | 'interpreted';

export class CompiledOperations {
  private readonly documents = new Map<DocumentNode, Map<string, Operation>>();
  private schema: GraphQLSchema | undefined;
  /** Executions by how they ran, for /metrics. */
  readonly runs: Record<ExecutionMode, number> = { compiled: 0, interpreted: 0 };

  constructor(
    readonly capacity: number = COMPILED_DOCUMENTS,
    private readonly onFallback: (reason: unknown, operationName: string | undefined) => void = () => {},
  ) {}

  /** Documents in the cache. */
  get size(): number {
    return this.documents.size;
  }

  /**
   * The compiled operation to run, or undefined when this run interprets: the document's first use, a subscription,
   * an unknown operation name, or an operation graphql-jit cannot compile.
   */
  compiled(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): Operation | undefined {
    if (schema !== this.schema) {
      this.documents.clear();
      this.schema = schema;
    }
    let operations = this.documents.get(document);
    if (operations) {
      this.documents.delete(document); // to the back: most recently used
    } else {
      operations = new Map();
      if (this.documents.size >= this.capacity) this.documents.delete(this.documents.keys().next().value!);
    }
    this.documents.set(document, operations);
    const name = operationName ?? '';
    const op = operations.get(name);
    if (!op) {
      // Only operations the document has are kept, so a document's entries are bounded by its operations.
      const definition = getOperationAST(document, operationName);
      if (definition) {
        operations.set(name, {
          variables: definition.variableDefinitions ?? [],
          // graphql-jit has no incremental delivery: @defer and @stream stay with the interpreter.
          ...(definition.operation === 'subscription' || deliversIncrementally(document) ? { query: null } : {}),
        });
      }
      return undefined; // first use: interpreted
    }
    if (op.query === undefined) {
      const named = operationName ?? undefined;
      op.query = compileOperation(schema, document, named, (reason) => this.onFallback(reason, named));
    }
    return op.query ? op : undefined;
  }

  /**
   * The run of `args`' operation compiled, counted as such, or undefined (counted as interpreted) when it is to be
   * interpreted: not compiled (yet), or variables the interpreter's own coercion refuses, which it refuses word for word.
   * `count` false: only asked, not run (the direct path for known queries counts the run when it makes it).
   */
  runnable(args: ExecuteArgs, count = true): ((signal?: OperationSignal) => Promise<ExecutionResult>) | undefined {
    const op = this.compiled(args.schema, args.document, args.operationName);
    if (!op || (op.variables.length > 0 && refusesVariables(args, op.variables))) {
      if (count) this.runs.interpreted++;
      return undefined;
    }
    if (count) this.runs.compiled++;
    return (signal) => run(op.query!, args, signal);
  }
}

/** Whether the document asks for @defer or @stream anywhere (its operations or fragments). */
function deliversIncrementally(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'defer' || node.name.value === 'stream') found = true;
      return found ? BREAK : undefined;
    },
  });
  return found;
}

/**
 * graphql-jit's compiled function for an operation of `document`, or null (after telling `onFallback` why) when it
 * cannot compile it. REST route documents (rest-adapter/execute.ts) and /graphql documents both compile through here.
 */
export function compileOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
  onFallback: (reason: unknown) => void,
): CompiledQuery['query'] | null {
  let compiled: CompiledQuery | ExecutionResult;
  try {
    compiled = compileQuery(schema, document, operationName);
  } catch (err) {
    onFallback(err);
    return null;
  }
  if (!isCompiledQuery(compiled)) {
    onFallback(compiled.errors?.[0] ?? compiled);
    return null;
  }
  return compiled.query;
}

/** Offset in `body` of a 1-based line and column. */
function offsetOf(body: string, { line, column }: SourceLocation): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const next = body.indexOf('\n', offset);
    if (next < 0) break;
    offset = next + 1;
  }
  return offset + column - 1;
}

/**
 * graphql-jit's errors carry locations but no source positions, and no extensions object when the error has none:
 * they are rebuilt as graphql-js's own, as the interpreter reports them (the plugins after execution copy errors by
 * their source positions, and add codes to their extensions).
 */
function asGraphQLError(e: GraphQLError, document: DocumentNode): GraphQLError {
  const source = document.loc?.source;
  const locations = (e as { locations?: readonly SourceLocation[] }).locations;
  return new GraphQLError(e.message, {
    path: e.path,
    originalError: e.originalError,
    extensions: e.extensions,
    ...(source && locations?.length ? { source, positions: locations.map((l) => offsetOf(source.body, l)) } : {}),
  });
}

function normalized(result: ExecutionResult, document: DocumentNode): ExecutionResult {
  if (!result.errors?.length) return result;
  return { ...result, errors: result.errors.map((e) => asGraphQLError(e, document)) };
}

export interface ExecuteArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  rootValue?: unknown;
  contextValue?: unknown;
  variableValues?: Record<string, unknown> | null;
  operationName?: string | null;
  signal?: OperationSignal;
}

/**
 * Runs queries and mutations on /graphql compiled. Register before the plugins that wrap execution (fair shares, the
 * deadline): it replaces the executor itself, so they wrap the compiled run as they wrapped the interpreted one.
 */
export function compiledExecutionPlugin(operations: CompiledOperations): Plugin {
  return {
    onExecute({ executeFn, setExecuteFn }) {
      setExecuteFn((args) => {
        const a = args as unknown as ExecuteArgs;
        const compiled = operations.runnable(a);
        return compiled ? compiled(a.signal) : executeFn(args);
      });
    },
  };
}

function refusesVariables(a: ExecuteArgs, variables: readonly VariableDefinitionNode[]): boolean {
  const coerced = getVariableValues(a.schema, variables, a.variableValues ?? {}, { maxErrors: 50 });
  return 'errors' in coerced && Boolean(coerced.errors);
}

async function run(
  query: CompiledQuery['query'],
  a: ExecuteArgs,
  signal: OperationSignal | undefined,
): Promise<ExecutionResult> {
  signal?.throwIfAborted(); // the deadline passed while waiting for a slot: nothing is started
  return normalized(await query(a.rootValue, a.contextValue, a.variableValues ?? {}), a.document);
}
