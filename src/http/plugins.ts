// Small Yoga plugins: health endpoints and request logs.
import type { Plugin } from 'graphql-yoga';
import type { GraphQLError } from 'graphql';
import type { Logger } from '../log.js';

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

/** GET /healthz: the process is up. GET /readyz: the database answers. Neither needs a key. */
export function healthPlugin(ping: () => Promise<void>): Plugin {
  return {
    async onRequest({ url, endResponse }) {
      if (url.pathname === '/healthz') return endResponse(json(200, { status: 'ok' }));
      if (url.pathname === '/readyz') {
        try {
          await ping();
          endResponse(json(200, { status: 'ready' }));
        } catch (err) {
          endResponse(json(503, { status: 'unavailable', reason: (err as Error).message }));
        }
      }
    },
  };
}

/** One log line per request: method, path, status, duration. */
export function requestLogPlugin(log: Logger): Plugin {
  const started = new WeakMap<Request, number>();
  return {
    onRequest({ request }) {
      started.set(request, performance.now());
    },
    onResponse({ request, response }) {
      const t0 = started.get(request);
      const url = new URL(request.url);
      log.info({
        method: request.method,
        path: url.pathname,
        status: response.status,
        ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 10) / 10,
      }, 'request');
    },
  };
}

/** Codes graphql-yoga gives to malformed requests; the contract calls them all invalid_input (§4). */
const GRAPHQL_INPUT_CODES = new Set(['GRAPHQL_VALIDATION_FAILED', 'GRAPHQL_PARSE_FAILED', 'BAD_USER_INPUT']);

/** Rewrites parse, validation and coercion error codes to the contract's `invalid_input`, and 413 to `request_too_large`. */
export function contractCodesPlugin(): Plugin {
  return {
    onResultProcess({ result }) {
      for (const r of Array.isArray(result) ? result : [result]) {
        const errors = (r as { errors?: readonly GraphQLError[] } | undefined)?.errors;
        for (const e of errors ?? []) {
          const code = e.extensions?.code;
          if (code === 'REQUEST_ENTITY_TOO_LARGE') {
            (e.extensions as Record<string, unknown>).code = 'request_too_large';
          } else if (code === undefined || (typeof code === 'string' && GRAPHQL_INPUT_CODES.has(code))) {
            (e.extensions as Record<string, unknown>).code = 'invalid_input';
          }
        }
      }
    },
  };
}
