// Small Yoga plugins: health endpoints and request logs.
import type { Plugin } from 'graphql-yoga';
import { GraphQLError as GraphQLErrorClass, type GraphQLError } from 'graphql';
import type { Logger } from '../log.js';
import { isContractCode, OUTAGE_RETRY_AFTER_SECONDS } from '../errors.js';
import { MAX_INT, wholeNumberRange } from '../input/numbers.js';

/**
 * A JSON answer made with the server's own Response class (Yoga's fetch ponyfill, `fetchAPI.Response`), which writes
 * a string body straight to the socket; the platform's Response would be read back through a web stream (a /healthz
 * cost about 0.1 ms of CPU more that way, four times the rest of its work).
 */
const json = (R: typeof Response, status: number, body: unknown, headers: Record<string, string> = {}) =>
  new R(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });

/** How long /readyz waits for the database's answer before it says unavailable. */
export const READY_PING_TIMEOUT_MS = 2000;

/**
 * GET /healthz: the process is up. GET /readyz: the database answers (within READY_PING_TIMEOUT_MS). Neither needs a
 * key. An unavailable answer names no host, port or credential (the driver's messages do): the reason goes to the log,
 * at warn, when readiness is lost, and at info when it returns.
 */
export function healthPlugin(ping: () => Promise<void>, log?: Logger): Plugin {
  let ready = true;
  return {
    async onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname === '/healthz') return endResponse(json(fetchAPI.Response, 200, { status: 'ok' }));
      if (url.pathname === '/readyz') {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            ping(),
            new Promise((_, reject) => {
              timer = setTimeout(
                () => reject(new Error(`the database did not answer within ${READY_PING_TIMEOUT_MS} ms`)),
                READY_PING_TIMEOUT_MS,
              );
            }),
          ]);
          if (!ready) log?.info('readyz: the database answers again');
          ready = true;
          endResponse(json(fetchAPI.Response, 200, { status: 'ready' }));
        } catch (err) {
          if (ready)
            log?.warn(
              { reason: err instanceof Error ? err.message : String(err) },
              'readyz: the database does not answer',
            );
          ready = false;
          endResponse(
            json(
              fetchAPI.Response,
              503,
              { status: 'unavailable', reason: 'the database cannot be reached' },
              { 'retry-after': String(OUTAGE_RETRY_AFTER_SECONDS) },
            ),
          );
        } finally {
          clearTimeout(timer);
        }
      }
    },
  };
}

/** One log line per request: method, path, status, duration. */
export function requestLogPlugin(log: Logger): Plugin {
  // The start and path of each request (the URL Yoga parsed once); nothing at all when info lines are not written.
  const started = new WeakMap<Request, { t0: number; path: string }>();
  return {
    onRequest({ request, url }) {
      if (log.isLevelEnabled('info')) started.set(request, { t0: performance.now(), path: url.pathname });
    },
    onResponse({ request, response }) {
      if (!log.isLevelEnabled('info')) return;
      const seen = started.get(request);
      log.info(
        {
          method: request.method,
          path: seen?.path ?? new URL(request.url).pathname,
          status: response.status,
          ms: seen === undefined ? undefined : Math.round((performance.now() - seen.t0) * 10) / 10,
        },
        'request',
      );
    },
  };
}

/** The contract's code for an error graphql-yoga, graphql-js or a plugin raised with a code of their own (or none). */
function contractCodeOf(e: GraphQLError): string {
  const ext = e.extensions ?? {};
  if (isContractCode(ext.code)) return ext.code;
  if (ext.code === 'REQUEST_ENTITY_TOO_LARGE') return 'request_too_large';
  const status = (ext.http as { status?: number } | undefined)?.status ?? 0;
  if (status === 405) return 'method_not_allowed';
  if (status === 413) return 'request_too_large';
  if (status >= 500 || ext.code === 'INTERNAL_SERVER_ERROR') return 'server_error';
  // Parse, validation, coercion and malformed-request errors (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED,
  // BAD_USER_INPUT, BAD_REQUEST, …, or no code at all) are bad input.
  return 'invalid_input';
}

/** Yoga's message for a JSON body that does not parse. */
const YOGA_BAD_JSON = 'POST body sent invalid JSON.';

/** graphql-js's refusal of an Int outside 32 bits: it names no range a person could act on. */
const INT_OUT_OF_RANGE = /Int cannot represent non 32-bit signed integer value: \S+$/;
const INT_RANGE_HINT = ` (an id is ${wholeNumberRange(1)}; any other whole number is at most ${MAX_INT})`;

/**
 * Every error on /graphql carries one of the contract's codes: framework codes are rewritten to theirs. An Int out of
 * range also gets the range in its message.
 */
export function contractCodesPlugin(): Plugin {
  return {
    onResultProcess({ result }) {
      for (const r of Array.isArray(result) ? result : [result]) {
        const errors = (r as { errors?: readonly GraphQLError[] } | undefined)?.errors;
        for (const e of errors ?? []) {
          const code = contractCodeOf(e);
          if (e.extensions?.code !== code) (e.extensions as Record<string, unknown>).code = code;
          if (e.message === YOGA_BAD_JSON) {
            // Yoga's message, with the parser's own error in extensions: say it plainly, and keep the internals out.
            (e as { message: string }).message = 'The request body is not valid JSON.';
            const ext = e.extensions as Record<string, unknown>;
            delete ext.originalError;
            ext.params = { field: 'body' };
            // Not a GraphQL request at all: 400 under either media type (Yoga marks it as a spec error, 200 under JSON).
            ext.http = { status: 400 };
          }
          if (code === 'invalid_input' && INT_OUT_OF_RANGE.test(e.message)) {
            (e as { message: string }).message = `${e.message}${INT_RANGE_HINT}.`;
            // A number no id or count can be: 400 under either media type, as the REST face answers it.
            (e.extensions as Record<string, unknown>).http = { status: 400 };
          }
        }
      }
    },
  };
}

const tooLarge = (limit: number) =>
  new GraphQLErrorClass(`The request body is larger than the limit of ${limit} bytes.`, {
    extensions: { code: 'request_too_large', params: { limit }, http: { status: 413 } },
  });

/**
 * MAX_BODY_BYTES for /graphql bodies, multipart uploads excepted (they are limited by MAX_UPLOAD_BYTES while they
 * stream). Yoga's own limit is turned off because it would apply to uploads too. Register after the parsers.
 */
export function bodyLimitPlugin(limit: number): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      if ((request.headers.get('content-type') ?? '').toLowerCase().startsWith('multipart/form-data')) return;
      const declared = request.headers.get('content-length');
      if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
      // Node's HTTP parser never reads past a Content-Length: a body that declares one within the limit is within
      // it, and is read as it is (a web-stream transform on every request cost about a tenth of a request's CPU).
      if (declared !== null || !requestParser || !request.body) return;
      const parse = requestParser;
      // A body without a Content-Length (chunked) is counted as it is read.
      setRequestParser((req) => {
        let read = 0;
        const body = (req.body as ReadableStream<Uint8Array>).pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              read += chunk.byteLength;
              if (read > limit) controller.error(tooLarge(limit));
              else controller.enqueue(chunk);
            },
          }),
        );
        return parse(
          new fetchAPI.Request(req.url, {
            method: req.method,
            headers: req.headers,
            body,
            duplex: 'half',
          } as RequestInit),
        );
      });
    },
  };
}

/** The body types /graphql reads (multipart: uploads). */
export const GRAPHQL_BODY_TYPES = ['application/json', 'application/graphql+json', 'multipart/form-data'];

/**
 * A POST to /graphql whose body none of the parsers takes (text/plain, XML, …) answers 415 with the contract's error
 * body, naming the types it takes, where Yoga would answer an empty 415. Register after every body parser.
 */
export function unsupportedMediaTypePlugin(): Plugin {
  return {
    onRequestParse({ request, requestParser }) {
      if (requestParser || request.method !== 'POST') return;
      const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim();
      throw new GraphQLErrorClass(
        `${type ? `A ${type} body` : 'A body without a Content-Type'} is not read here: send application/json (or multipart/form-data for uploads).`,
        {
          extensions: {
            code: 'unsupported_media_type',
            params: { content_type: type, accepted: GRAPHQL_BODY_TYPES },
            http: { status: 415 },
          },
        },
      );
    },
  };
}
