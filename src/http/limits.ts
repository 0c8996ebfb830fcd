// Operation limits on /graphql, checked before anything runs: tokens while the document is parsed, aliases and
// depth while it is validated (graphql-armor's rules), cost once the variables are known (src/http/cost.ts, which
// knows page sizes), and a deadline on execution. Refusals answer 400 `operation_too_expensive` with
// `params { kind, value, limit }`; the deadline answers 503 `operation_timeout` with `params { limit }`.
import type { Plugin } from 'graphql-yoga';
import { validate, type DocumentNode, type GraphQLError, type ValidationContext } from 'graphql';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import { ApiError } from '../errors.js';
import type { GraphqlLimits } from '../config.js';
import { operationCost } from './cost.js';

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
  return new ApiError('operation_too_expensive',
    `The operation ${WHAT[kind]} ${figure}${kind === 'depth' ? ' levels deep' : ''}, over the limit of ${limit} (${kind}): ${HINT[kind]}.`,
    { kind, value, limit });
}

export function operationTimeout(limit: number): ApiError {
  return new ApiError('operation_timeout',
    `The operation did not finish within ${limit} ms and was stopped; ask for less, or try again later.`, { limit });
}

/** graphql-armor reports "…limit of N exceeded, found M." on its rejections: M is the figure of `params.value`. */
const found = (err: GraphQLError, fallback: number) => Number(/found (\d+)/.exec(err.message)?.[1] ?? fallback);

export interface Deadline {
  signal: AbortSignal;
  clear(): void;
  /** Whether the deadline has passed (reading the clock: the timer may not have had its turn yet) or the client went away. */
  expired(): boolean;
}

/**
 * Aborts after `ms` with `operation_timeout`, or with `outer` (the client went away); `clear()` when done.
 * The executor calls `signal.throwIfAborted()` before each field: every 16th call also reads the clock, so an operation
 * whose awaits all settle as microtasks (the embedded database answers in-process), which a timer could never
 * interrupt, still stops at the deadline instead of holding the event loop. The abort itself is queued as a
 * microtask, as a timer's would land between two synchronous stretches of the executor: aborting in the middle of
 * one would leave the promises of the fields it already started without a handler.
 */
export function deadline(ms: number, outer?: AbortSignal | null): Deadline {
  const controller = new AbortController();
  const end = performance.now() + ms;
  let queued = false;
  const expire = () => { if (!controller.signal.aborted) controller.abort(operationTimeout(ms)); };
  const timer = setTimeout(expire, ms);
  timer.unref?.();
  // The client going away aborts the same controller (AbortSignal.any would cost a weak reference and a
  // finalization record per request, a noticeable share of a cheap request's CPU).
  const onOuter = () => controller.abort(outer!.reason);
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  const signal = controller.signal;
  const throwIfAborted = signal.throwIfAborted.bind(signal);
  let calls = 0;
  signal.throwIfAborted = () => {
    // The clock is read every 16th call: on a list of 100 rows, reading it before each field was 2% of the CPU.
    if (!queued && (++calls & 15) === 0 && performance.now() >= end) {
      queued = true;
      queueMicrotask(expire);
    }
    throwIfAborted();
  };
  return {
    signal,
    clear: () => { clearTimeout(timer); outer?.removeEventListener('abort', onOuter); },
    expired: () => {
      if (performance.now() >= end) expire();
      return signal.aborted;
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
      (value) => { signal.removeEventListener('abort', onAbort); if (limit.expired()) reject(signal.reason); else resolve(value); },
      (err) => { signal.removeEventListener('abort', onAbort); reject(err); },
    );
  });
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
    maxDepthRule({ n: limits.maxDepth, ignoreIntrospection: false, flattenFragments: true, onReject: [refuse('depth', limits.maxDepth)] }),
  ];
  const tokens = maxTokensPlugin({
    n: limits.maxTokens,
    // Thrown from inside the parser, which stops reading at the first token over the limit.
    onReject: [() => { throw tooExpensive('tokens', limits.maxTokens + 1, limits.maxTokens); }],
  });
  const checkCost = (args: { schema: Parameters<typeof operationCost>[0]; document: Parameters<typeof operationCost>[1]; variableValues?: unknown; operationName?: string | null }) => {
    const cost = operationCost(args.schema, args.document, args.variableValues as Record<string, unknown> | undefined, args.operationName);
    if (cost > limits.maxCost) throw tooExpensive('cost', cost, limits.maxCost);
  };
  return {
    onParse: tokens.onParse as Plugin['onParse'],
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
      setExecuteFn((execArgs) => {
        const limit = deadline(limits.timeoutMs, request?.signal);
        let work;
        try {
          work = Promise.resolve(executeFn({ ...execArgs, signal: limit.signal } as typeof execArgs));
        } catch (err) {
          limit.clear();
          throw err;
        }
        // A race, as compiled runs take no signal (src/http/compiled.ts). The work wrapped here holds its fair-share
        // slot until it really ends (fairSharePlugin releases in its own finally), whenever the answer goes out.
        return beforeDeadline(work, limit).finally(limit.clear);
      });
    },
  };
}
