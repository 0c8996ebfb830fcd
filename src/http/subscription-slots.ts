// Open subscription streams, bounded per API key (SUBSCRIPTIONS_PER_KEY) and per instance (SUBSCRIPTIONS_MAX). Each
// open stream holds listeners and a connection, so without a bound one guest key could hold thousands.
//
// A slot is taken when the subscription is about to start (envelop's onSubscribe, after parsing, validation and the
// cost limits) and given back when the stream ends for any reason: the client closes it or goes away (Yoga returns
// the iterator), it completes, it fails, or it never opened (a refusal at subscribe time, a JSON Accept). Over either
// bound the request answers at once, before any stream opens, with a plain JSON error: 429
// `mc_dm_api_error.rate_limited` and Retry-After, whatever the Accept header asked for (an SSE client sees a failed
// connection carrying the code, not an event). Counted in this process: each instance bounds its own streams.
import { isAsyncIterable, processRegularResult, type Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import type { Visitor } from '../permissions/access.js';

/** Seconds a refused client is told to wait: streams end when their clients close them, not at a known time. */
const RETRY_AFTER_SECONDS = 5;

export class SubscriptionSlots {
  private readonly byKey = new Map<number, number>();
  private total = 0;

  constructor(
    readonly perKey: number,
    readonly max: number,
  ) {}

  /** Streams open now in this instance. */
  get open(): number {
    return this.total;
  }

  /** Streams `apiKeyId` holds open now. */
  heldBy(apiKeyId: number): number {
    return this.byKey.get(apiKeyId) ?? 0;
  }

  /** A slot for one stream of `apiKeyId`: the function that gives it back (once), or the refusal. */
  acquire(apiKeyId: number): (() => void) | ApiError {
    const held = this.heldBy(apiKeyId);
    const refuse = (message: string, limit: number) =>
      new ApiError(
        'mc_dm_api_error.rate_limited',
        message,
        { retry_after: RETRY_AFTER_SECONDS, limit },
        { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      );
    if (held >= this.perKey) {
      return refuse(
        `This API key already holds ${held} open subscription(s), the most one key may (SUBSCRIPTIONS_PER_KEY): close one before opening another.`,
        this.perKey,
      );
    }
    if (this.total >= this.max) {
      return refuse(
        `This instance already serves ${this.total} open subscriptions, the most it may (SUBSCRIPTIONS_MAX): try again later.`,
        this.max,
      );
    }
    this.total += 1;
    this.byKey.set(apiKeyId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = this.heldBy(apiKeyId) - 1;
      if (left > 0) this.byKey.set(apiKeyId, left);
      else this.byKey.delete(apiKeyId);
    };
  }
}

/** `source`, calling `release` once when it ends: done, failed, returned or thrown into. */
function releasing<T>(source: AsyncIterable<T>, release: () => void): AsyncIterableIterator<T> {
  const it = source[Symbol.asyncIterator]();
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      try {
        const r = await it.next();
        if (r.done) release();
        return r;
      } catch (err) {
        release();
        throw err;
      }
    },
    async return(value?: unknown) {
      release();
      return (await it.return?.(value)) ?? { done: true, value: undefined };
    },
    async throw(err?: unknown) {
      release();
      if (it.throw) return it.throw(err);
      throw err;
    },
  };
}

/** Register after operationLimitsPlugin (whose onSubscribe may refuse first, so no slot is taken for nothing). */
export function subscriptionSlotsPlugin(slots: SubscriptionSlots): Plugin {
  const refused = new WeakSet<Request>();
  return {
    onSubscribe({ args, subscribeFn, setSubscribeFn, setResultAndStopExecution }) {
      const ctx = args.contextValue as { request?: Request; visitor?: Pick<Visitor, 'apiKeyId'> };
      const slot = slots.acquire(ctx.visitor?.apiKeyId ?? 0);
      if (slot instanceof ApiError) {
        if (ctx.request) refused.add(ctx.request);
        setResultAndStopExecution({ errors: [slot] });
        return;
      }
      setSubscribeFn(async (a) => {
        try {
          return await subscribeFn(a);
        } catch (err) {
          slot();
          throw err;
        }
      });
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(releasing(result, slot));
          else slot(); // refused at subscribe time (scope, permission, not found): no stream
        },
      };
    },
    onResultProcess({ request, setResultProcessor }) {
      if (!refused.has(request)) return;
      // A plain JSON answer with the error's status (429), even to Accept: text/event-stream.
      const accept = request.headers.get('accept') ?? '';
      setResultProcessor(
        processRegularResult,
        accept.includes('application/graphql-response+json') ? 'application/graphql-response+json' : 'application/json',
      );
    },
  };
}
