// The HTTP policy, applied to every response in one place:
// - CORS is off unless CORS_ORIGINS names origins (or `*`, any origin). The API authenticates with a header, never
//   a cookie, so no answer ever allows credentials (and never with a wildcard).
// - `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer` everywhere; JSON answers get a
//   Content-Security-Policy that allows nothing; GraphiQL's page gets one that allows exactly its own inline script
//   (by hash), its blob: workers, inline styles and requests to this origin.
// - Served file bytes (the data route) are sandboxed and never rendered as HTML (see file-data.ts for the type).
import crypto from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

export const ALLOWED_HEADERS = 'Forum-Api-Key, Forum-Api-User, Content-Type, Range, If-None-Match';
/** What browser code may read of an answer: the download headers, and the rate-limit ones (to back off before a 429). */
export const EXPOSED_HEADERS =
  'Content-Disposition, Content-Range, Content-Length, ETag, Retry-After, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
export const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, DELETE';

const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The CSP of an HTML page: scripts from this origin, and its inline scripts (if any) by hash; nothing from elsewhere. */
export function pageCsp(html: string): string {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${crypto.createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`,
  );
  return [
    "default-src 'none'",
    `script-src ${["'self'", ...hashes].join(' ')}`,
    "worker-src 'self' blob:",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function httpPolicyPlugin(corsOrigins: readonly string[]): Plugin {
  const any = corsOrigins.includes('*');
  const allowed = new Set(corsOrigins);
  const allowOrigin = (origin: string | null): string | null => {
    if (!origin) return null;
    if (any) return '*';
    return allowed.has(origin) ? origin : null;
  };

  return {
    onRequest({ request, endResponse, fetchAPI }) {
      // CORS preflight: answered here for every path, allowed or not (a refused origin gets no CORS headers).
      if (request.method !== 'OPTIONS' || !request.headers.get('access-control-request-method')) return;
      const origin = allowOrigin(request.headers.get('origin'));
      const headers: Record<string, string> = { vary: 'Origin' };
      if (origin) {
        Object.assign(headers, {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': ALLOWED_METHODS,
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': '600',
        });
      }
      endResponse(new fetchAPI.Response(null, { status: 204, headers }));
    },
    async onResponse({ request, response, setResponse, fetchAPI }) {
      const h = response.headers;
      // Yoga's own CORS handling is off (server.ts); nothing else may have set these.
      for (const name of ['access-control-allow-origin', 'access-control-allow-credentials']) h.delete(name);
      const origin = allowOrigin(request.headers.get('origin'));
      if (origin) {
        h.set('access-control-allow-origin', origin);
        h.set('access-control-expose-headers', EXPOSED_HEADERS);
      }
      if (corsOrigins.length > 0 && !any) h.append('vary', 'Origin');
      h.set('x-content-type-options', 'nosniff');
      h.set('referrer-policy', 'no-referrer');
      if (h.has('content-security-policy')) return; // the data route sets its own
      if ((h.get('content-type') ?? '').startsWith('text/html')) {
        const html = await response.text();
        h.set('content-security-policy', pageCsp(html));
        h.set('x-frame-options', 'DENY');
        setResponse(new fetchAPI.Response(html, { status: response.status, headers: h }));
        return;
      }
      h.set('content-security-policy', API_CSP);
    },
  };
}
