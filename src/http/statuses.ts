// HTTP statuses on /graphql, as the GraphQL-over-HTTP spec asks.
//
// An executed operation (its result has a `data` entry, even null) answers:
//   - with `Accept: application/graphql-response+json`: 200 when `data` is not null, else the status of the first
//     error's code (src/errors.ts);
//   - with `application/json` (or no Accept): 200, the errors in the body.
// A request refused before execution (no key, unknown key, body too large, malformed body, an operation over the
// limits, a persisted-document error, the deadline) has no `data` entry and keeps the status of its code under both.
//
// Domain errors carry `extensions.http.status` (ApiError) so that refusals before execution keep their status;
// Yoga picks the highest such status for a response, and ignores the status of errors marked `http.spec` under
// application/json. For executed results this plugin rewrites `extensions.http` of each error: `spec: true`, and a
// status only on the first error of a result without data (Yoga uses it for application/graphql-response+json).
// Response headers an error asks for (Retry-After) are kept. A result with a `service_unavailable` error (the
// database could not be reached) is answered as a refusal: 503, that error alone, no `data` (what another root field
// of it may have done is not reported). Of the refusals, only a document that does not parse or validate
// (`invalid_input`, marked `spec` by Yoga) answers 200 under application/json, as the spec says; Yoga also marks every
// parse error `spec`, so the limits refused while parsing are unmarked here.
import type { Plugin } from 'graphql-yoga';
import { GraphQLError } from 'graphql';
import { statusOf } from '../errors.js';

interface HttpExtension {
  status?: number;
  spec?: boolean;
  headers?: Record<string, string>;
}

function withHttp(e: GraphQLError, http: HttpExtension): GraphQLError {
  return new GraphQLError(e.message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    originalError: e.originalError,
    extensions: { ...e.extensions, http },
  });
}

/** A result refused before execution: every code but invalid_input keeps its status under both media types. */
function refused(r: { errors?: readonly GraphQLError[] }) {
  if (
    !r.errors?.some(
      (e) => e.extensions?.code !== 'invalid_input' && (e.extensions?.http as HttpExtension | undefined)?.spec,
    )
  )
    return r;
  return {
    ...r,
    errors: r.errors.map((e) => {
      const http = e.extensions?.http as HttpExtension | undefined;
      return e.extensions?.code !== 'invalid_input' && http?.spec ? withHttp(e, { ...http, spec: false }) : e;
    }),
  };
}

/** Statuses of executed results; register after contractCodesPlugin (it reads the contract codes). */
export function graphqlStatusPlugin(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      const fix = (r: unknown): unknown => {
        if (!r || typeof r !== 'object' || !('errors' in r)) return r; // a stream, or no errors
        if (!('data' in r)) return refused(r as { errors?: readonly GraphQLError[] });
        const executed = r as { data?: unknown; errors?: readonly GraphQLError[] };
        if (!executed.errors?.length) return r;
        // The database could not be reached: whatever else the result holds is not to be relied on, so the whole
        // request answers 503 service_unavailable (with Retry-After) under either media type, as a refusal does.
        const down = executed.errors.find((e) => e.extensions?.code === 'service_unavailable');
        if (down)
          return {
            errors: [
              withHttp(down, {
                ...(down.extensions?.http as HttpExtension | undefined),
                status: statusOf('service_unavailable'),
                spec: false,
              }),
            ],
          };
        const errors = executed.errors.map((e, i) => {
          const headers = (e.extensions?.http as HttpExtension | undefined)?.headers;
          const code = typeof e.extensions?.code === 'string' ? e.extensions.code : 'server_error';
          const status = i === 0 && executed.data == null ? statusOf(code) : undefined;
          return withHttp(e, { spec: true, ...(status ? { status } : {}), ...(headers ? { headers } : {}) });
        });
        return { ...executed, errors };
      };
      setResult((Array.isArray(result) ? result.map(fix) : fix(result)) as typeof result);
    },
  };
}
