// Operation limits on /graphql, checked before anything runs: tokens and bracket nesting while the document is parsed, aliases and
// depth while it is validated (graphql-armor's rules), cost once the variables are known (src/graphql/cost.ts, which
// knows page sizes), and a deadline on execution. Refusals answer 400 `operation_too_expensive` with
// `params { kind, value, limit }`; the deadline answers 503 `operation_timeout` with `params { limit }`.
import type { Plugin } from 'graphql-yoga';
import {
  TokenKind,
  validate,
  type DocumentNode,
  type GraphQLError,
  type ParseOptions,
  type Source,
  type ValidationContext,
} from 'graphql';
import { createRequire } from 'node:module';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { ApiError, ClientGone } from '../errors.js';
import type { GraphqlLimits } from '../config.js';
import { operationCost } from './cost.js';
import { startResponseBudget } from './response-size.js';
import { boundTo } from '../db/operation-scope.js';
import { OperationAbort, type OperationSignal } from '../db/operation-signal.js';
import { clientOf, endOperation } from './context.js';

// graphql's parser class is not exported from its root; required (the CommonJS build, the one `graphql` resolves to
// here and in the tests' alias) so that it is the same instance as the rest of graphql.
const { Parser } = createRequire(import.meta.url)(
  'graphql/language/parser',
) as typeof import('graphql/language/parser.js');

export type LimitKind = 'cost' | 'depth' | 'aliases' | 'tokens';

const WHAT: Record<LimitKind, string> = {
  cost: 'costs',
  depth: 'is nested',
  aliases: 'uses aliases',
  tokens: 'has tokens',
};
const HINT: Record<LimitKind, string> = {
  cost: 'ask for smaller pages (first/last/perPage) or fewer nested lists, or split it into several requests',
  depth: 'select fewer nested levels, or fetch the deeper objects in another request',
  aliases: 'split it into several requests',
  tokens: 'shorten the document, or split it into several requests',
};

export function tooExpensive(kind: LimitKind, value: number, limit: number): ApiError {
  const figure = kind === 'tokens' ? `more than ${limit}` : String(value);
  return new ApiError(
    'operation_too_expensive',
    `The operation ${WHAT[kind]} ${figure}${kind === 'depth' ? ' levels deep' : ''}, over the limit of ${limit} (${kind}): ${HINT[kind]}.`,
    { kind, value, limit },
  );
}

export function operationTimeout(limit: number): ApiError {
  return new ApiError(
    'operation_timeout',
    `The operation did not finish within ${limit} ms and was stopped; ask for less, or try again later.`,
    { limit },
  );
}

/**
 * How deep brackets (`{`, `[`, `(`) may nest in a document before the parser stops reading it: graphql-js's parser
 * recurses once or more per bracket, and 5000 nested brackets overflow the stack before the token limit is reached.
 * Far above what GRAPHQL_MAX_DEPTH lets through (a level of fields is one brace; inline fragments and argument values
 * add a few), far below what the stack holds.
 */
export const nestingLimit = (maxDepth: number) => Math.min(1000, Math.max(64, 4 * maxDepth));

/**
 * graphql-js's parser, stopping at the first token over `maxTokens` or the first bracket nested deeper than
 * nestingLimit(maxDepth): both are checked as each token is read, before the parser descends into it.
 */
class LimitedParser extends Parser {
  private tokens = 0;
  private nesting = 0;
  constructor(
    source: string | Source,
    options: ParseOptions | undefined,
    private readonly limits: Pick<GraphqlLimits, 'maxTokens' | 'maxDepth'>,
  ) {
    super(source, options);
  }

  override advanceLexer(): void {
    super.advanceLexer();
    const { kind } = this._lexer.token;
    if (kind === TokenKind.EOF) return;
    if (++this.tokens > this.limits.maxTokens) throw tooExpensive('tokens', this.tokens, this.limits.maxTokens);
    if (kind === TokenKind.BRACE_L || kind === TokenKind.BRACKET_L || kind === TokenKind.PAREN_L) {
      const bound = nestingLimit(this.limits.maxDepth);
      if (++this.nesting > bound) {
        throw new ApiError(
          'operation_too_expensive',
          `The operation nests brackets more than ${bound} deep, over the limit of ${this.limits.maxDepth} (depth): ${HINT.depth}.`,
          { kind: 'depth', value: this.nesting, limit: this.limits.maxDepth },
        );
      }
    } else if (kind === TokenKind.BRACE_R || kind === TokenKind.BRACKET_R || kind === TokenKind.PAREN_R) {
      this.nesting--;
    }
  }
}

/** Parses `source` within the limits (operation_too_expensive, kind `tokens` or `depth`, past them). */
export function parseWithinLimits(
  source: string | Source,
  options: ParseOptions | undefined,
  limits: Pick<GraphqlLimits, 'maxTokens' | 'maxDepth'>,
): DocumentNode {
  return new LimitedParser(source, options, limits).parseDocument();
}

/** graphql-armor reports "…limit of N exceeded, found M." on its rejections: M is the figure of `params.value`. */
const found = (err: GraphQLError, fallback: number) => Number(/found (\d+)/.exec(err.message)?.[1] ?? fallback);

export interface Deadline {
  signal: OperationSignal;
  clear(): void;
  /** Whether the deadline has passed (reading the clock: the timer may not have had its turn yet) or the client went away. */
  expired(): boolean;
  /** Stops the operation now with `reason` (queued as a microtask, as the deadline's own abort is). */
  abort(reason: unknown): void;
}

/**
 * The deadline's signal. The executor calls `throwIfAborted()` before each field: every 16th call also reads the
 * clock, so an operation whose awaits all settle as microtasks (the embedded database answers in-process), which a
 * timer could never interrupt, still stops at the deadline instead of holding the event loop. The abort itself is
 * queued as a microtask, as a timer's would land between two synchronous stretches of the executor: aborting in the
 * middle of one would leave the promises of the fields it already started without a handler.
 */
class DeadlineSignal extends OperationAbort {
  queued = false;
  private calls = 0;
  constructor(
    private readonly end: number,
    private readonly ms: number,
  ) {
    super();
  }
  readonly expire = () => this.abort(operationTimeout(this.ms));
  override throwIfAborted(): void {
    // The clock is read every 16th call: on a list of 100 rows, reading it before each field was 2% of the CPU.
    if (!this.queued && (++this.calls & 15) === 0 && performance.now() >= this.end) {
      this.queued = true;
      queueMicrotask(this.expire);
    }
    super.throwIfAborted();
  }
}

/**
 * Aborts after `ms` with `operation_timeout`, or with `outer` (the client went away); `clear()` when done. Its signal
 * is an OperationAbort (src/db/operation-signal.ts), not an AbortController's: one is made for every operation.
 */
export function deadline(ms: number, outer?: AbortSignal | null): Deadline {
  const end = performance.now() + ms;
  const signal = new DeadlineSignal(end, ms);
  const timer = setTimeout(signal.expire, ms);
  timer.unref?.();
  // The client going away aborts the same signal (AbortSignal.any would cost a weak reference and a finalization
  // record per request, a noticeable share of a cheap request's CPU). Its reason is ClientGone rather than the HTTP
  // layer's AbortError (a DOMException with a stack): a client going away is no defect, and is logged as such
  // (src/http/server.ts).
  const onOuter = () => signal.abort(new ClientGone());
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  return {
    signal,
    clear: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
    expired: () => {
      if (performance.now() >= end) signal.expire();
      return signal.aborted;
    },
    abort: (reason) => {
      if (signal.queued) return;
      signal.queued = true;
      queueMicrotask(() => signal.abort(reason));
    },
  };
}

/**
 * The operation's result if it settles before the deadline, else the deadline's reason (operation_timeout, or the
 * client having gone away). An operation that settles with the deadline already past answers the timeout too: on the
 * embedded database every await of an operation can settle as a microtask, so the deadline's timer never gets a turn
 * before the end.
 */
export function beforeDeadline<T>(work: Promise<T>, limit: Pick<Deadline, 'signal' | 'expired'>): Promise<T> {
  const { signal } = limit;
  if (limit.expired()) {
    work.catch(() => {}); // finishes in the background; its outcome is no longer anyone's
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (limit.expired()) reject(signal.reason);
        else resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** What an operation's cost is computed from: its document, operation and variables. */
export interface CostArgs {
  schema: Parameters<typeof operationCost>[0];
  document: Parameters<typeof operationCost>[1];
  variableValues?: unknown;
  operationName?: string | null;
}

/** Throws operation_too_expensive (cost) when the operation, with these variables, costs more than GRAPHQL_MAX_COST. */
export function checkOperationCost(limits: Pick<GraphqlLimits, 'maxCost'>, args: CostArgs): void {
  const cost = operationCost(
    args.schema,
    args.document,
    args.variableValues as Record<string, unknown> | undefined,
    args.operationName,
  );
  if (cost > limits.maxCost) throw tooExpensive('cost', cost, limits.maxCost);
}

/**
 * Runs one operation's work under its limits, as both faces run every operation: a deadline (GRAPHQL_TIMEOUT_MS, or
 * the client going away), the response's byte budget (GRAPHQL_MAX_RESPONSE_BYTES: past it the operation stops as at
 * its deadline, answering 400 operation_too_expensive with kind response_size), and its statements bound to the
 * deadline (cancelled in the server when it passes: src/db/operation-scope.ts). The answer is raced against the
 * deadline, as compiled runs take no signal (src/graphql/compiled.ts); work that outlives it keeps what it holds (a
 * fair-share slot is released in the work's own finally) until it really ends. The operation's per-request caches
 * are emptied at the end, except for a stream's (@defer, @stream), whose fields resolve after its first part.
 */
export function runWithinLimits<T>(
  limits: Pick<GraphqlLimits, 'timeoutMs' | 'maxResponseBytes'>,
  context: unknown,
  outer: AbortSignal | null | undefined,
  work: (signal: OperationSignal) => T | Promise<T>,
): Promise<Awaited<T>> {
  const limit = deadline(limits.timeoutMs, outer);
  if (limits.maxResponseBytes) startResponseBudget(context, limits.maxResponseBytes, (refusal) => limit.abort(refusal));
  let running: Promise<Awaited<T>>;
  try {
    running = Promise.resolve(boundTo(limit.signal, () => work(limit.signal), clientOf(context), context)) as Promise<
      Awaited<T>
    >;
  } catch (err) {
    limit.clear();
    endOperation(context);
    throw err;
  }
  return beforeDeadline(running, limit).then(
    (result) => {
      limit.clear();
      if (typeof (result as { [Symbol.asyncIterator]?: unknown })?.[Symbol.asyncIterator] !== 'function')
        endOperation(context);
      return result;
    },
    (err: unknown) => {
      limit.clear();
      endOperation(context);
      throw err;
    },
  );
}

export function operationLimitsPlugin(limits: GraphqlLimits): Plugin {
  // Aliases and depth are checked before graphql-js's own validation, whose rules would first walk the whole of a
  // refused document (1000 aliases take tens of milliseconds there): the first rule over its limit stops the walk.
  let refusal: ApiError | undefined; // set by the rules below during one synchronous validate()
  const checked = new WeakMap<DocumentNode, ApiError | null>();
  const refuse = (kind: LimitKind, limit: number) => (_ctx: ValidationContext | null, err: GraphQLError) => {
    refusal = tooExpensive(kind, found(err, limit + 1), limit);
  };
  const rules = [
    maxAliasesRule({ n: limits.maxAliases, onReject: [refuse('aliases', limits.maxAliases)] }),
    maxDepthRule({
      n: limits.maxDepth,
      ignoreIntrospection: false,
      flattenFragments: true,
      onReject: [refuse('depth', limits.maxDepth)],
    }),
  ];
  const checkCost = (args: CostArgs) => checkOperationCost(limits, args);
  return {
    // Tokens and bracket nesting are checked inside the parser, which stops reading at the first token over a limit.
    onParse({ setParseFn }) {
      setParseFn((source, options) => parseWithinLimits(source, options, limits));
    },
    onValidate({ params, setResult }) {
      // Yoga caches parsed documents, so a document sent again is the same object: checked once.
      let verdict = checked.get(params.documentAST);
      if (verdict === undefined) {
        refusal = undefined;
        try {
          validate(params.schema, params.documentAST, rules);
        } catch (err) {
          if (!refusal) throw err;
        }
        verdict = refusal ?? null;
        checked.set(params.documentAST, verdict);
      }
      if (verdict) setResult([verdict]);
    },
    onSubscribe({ args }) {
      checkCost(args);
    },
    onExecute({ args, executeFn, setExecuteFn }) {
      checkCost(args);
      const request = (args.contextValue as { request?: Request } | undefined)?.request;
      setExecuteFn((execArgs) =>
        runWithinLimits(limits, execArgs.contextValue, request?.signal, (signal) =>
          // Object.assign, not a spread with a new key (V8's slow path: src/graphql/context.ts).
          executeFn(Object.assign({}, execArgs, { signal }) as typeof execArgs),
        ),
      );
    },
  };
}
