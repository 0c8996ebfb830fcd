// Small Yoga plugins: health endpoints and request logs.
import type { Plugin } from 'graphql-yoga';
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
