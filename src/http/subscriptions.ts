// How subscriptions answer over HTTP, as graphql-sse clients expect:
// - asked for as JSON: Yoga serves subscriptions as Server-Sent Events only, and would otherwise answer an empty
//   406; this answers a JSON error with the contract's code and the header to send instead;
// - refused before it runs (no key or an unknown one, a missing scope, a limit, a document that does not validate):
//   a plain JSON answer with the code's status, which the client reports as it is, without retrying;
// - refused by its resolver once it runs (the download does not exist, the visitor may not see it): a 200 stream
//   whose one `next` event carries the error result, then `complete`, as the GraphQL-over-SSE protocol says an
//   operation's own errors travel. A client that got a non-2xx answer would take it for a network failure and retry.
import { isAsyncIterable, processRegularResult, type Plugin } from 'graphql-yoga';
import { GraphQLError } from 'graphql';
import { ApiError } from '../errors.js';

const JSON_TYPES = ['application/graphql-response+json', 'application/json'];

/** Codes that refuse the request itself (who sends it, with which rights), whichever step found them. */
const REQUEST_REFUSALS = new Set([
  'no_api_key_in_request',
  'api_key_not_found',
  'api_key_inactive',
  'api_scope_missing',
  'api_user_header_not_allowed',
  'invalid_api_user',
  'mc_dm_api_error.rate_limited',
]);

/**
 * The JSON type to answer in: the one the client accepts, else (an event-stream client) the GraphQL response type,
 * under which a document that does not validate answers 400 rather than a 200 the client would read as a stream.
 */
const jsonType = (request: Request, fallback = 'application/json') => {
  const accept = request.headers.get('accept') ?? '';
  return JSON_TYPES.find((t) => accept.includes(t)) ?? fallback;
};

/** An error whose status Yoga leaves out of the answer's status (the stream answers 200). */
const inStream = (e: GraphQLError) =>
  new GraphQLError(e.message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    originalError: e.originalError,
    extensions: { ...e.extensions, http: { spec: true } },
  });

export function subscriptionTransportPlugin(): Plugin {
  /** Requests whose subscription ran and was refused by its resolver (no stream came back). */
  const refusedByResolver = new WeakSet<Request>();
  return {
    onSubscribe({ args }) {
      const request = (args.contextValue as { request?: Request }).request;
      return {
        onSubscribeResult({ result }) {
          if (request && !isAsyncIterable(result)) refusedByResolver.add(request);
        },
      };
    },
    onResultProcess({ request, result, resultProcessor, setResult, setResultProcessor }) {
      if (!resultProcessor && isAsyncIterable(result)) {
        // The stream was never read: returning it releases whatever it holds.
        void (result as AsyncIterable<unknown>)[Symbol.asyncIterator]().return?.();
        setResult({
          errors: [
            new ApiError(
              'invalid_input',
              'The result of this operation arrives in parts (a subscription, @defer or @stream): send the header Accept: text/event-stream (or multipart/mixed for @defer and @stream).',
              { field: 'accept' },
            ),
          ],
        });
        setResultProcessor(processRegularResult, jsonType(request));
        return;
      }
      if (!resultProcessor || resultProcessor === processRegularResult || isAsyncIterable(result)) return;
      const refusal = result as { data?: unknown; errors?: readonly GraphQLError[] };
      if (Array.isArray(result) || 'data' in refusal || !refusal.errors?.length) return;
      const codes = refusal.errors.map((e) => e.extensions?.code);
      if (refusedByResolver.has(request) && !codes.some((c) => REQUEST_REFUSALS.has(c as string))) {
        setResult({ ...refusal, errors: refusal.errors.map(inStream) });
        return;
      }
      setResultProcessor(processRegularResult, jsonType(request, 'application/graphql-response+json'));
    },
  };
}
