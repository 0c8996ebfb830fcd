// The one place that knows error codes and their HTTP statuses (contract §4).
import { GraphQLError } from 'graphql';

const STATUS: Record<string, number> = {
  no_api_key_in_request: 401,
  api_key_not_found: 401,
  api_key_inactive: 401,
  api_scope_missing: 403,
  api_user_header_not_allowed: 403,
  invalid_api_user: 400,
  do_not_have_permission: 403,
  endpoint_not_found: 404,
  method_not_allowed: 405,
  required_input_missing: 400,
  invalid_input: 400,
  request_too_large: 413,
  operation_too_expensive: 400,
  operation_timeout: 503,
  persisted_document_required: 400,
  persisted_document_not_found: 400,
  'mc_dm_api_error.rate_limited': 429,
  server_error: 500,
  server_busy: 503,
  server_starting: 503,
};

/** Status for a code: the table above, 404 for `*_not_found`, 422 for every other mc_dm_api_error. */
export function statusOf(code: string): number {
  if (code in STATUS) return STATUS[code]!;
  if (code.startsWith('mc_dm_api_error.') && code.endsWith('_not_found')) return 404;
  if (code.startsWith('mc_dm_api_error.')) return 422;
  return 400;
}

/** The status an error answers with: its own override, else the table. */
export function statusOfError(err: unknown, code: string): number {
  const status = (err as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return err instanceof ApiError && typeof status === 'number' ? status : statusOf(code);
}

/** Whether `code` is one of the contract's codes (the table above, or an `mc_dm_api_error.*` domain code). */
export function isContractCode(code: unknown): code is string {
  return typeof code === 'string' && (code in STATUS || code.startsWith('mc_dm_api_error.'));
}

export type ErrorParams = Record<string, unknown>;

/** A domain error: a code from the contract, a message a person can act on, optional params. */
export class ApiError extends GraphQLError {
  readonly code: string;
  readonly params: ErrorParams;
  /** `status` overrides the table for the rare code whose status depends on the case (a missing blob: 404). */
  constructor(code: string, message: string, params: ErrorParams = {}, headers?: Record<string, string>, status?: number) {
    super(message, {
      extensions: { code, params, http: { status: status ?? statusOf(code), ...(headers ? { headers } : {}) } },
    });
    this.code = code;
    this.params = params;
  }
}

export const notFound = (kind: 'category' | 'download' | 'comment' | 'file' | 'version' | 'user' | 'prefix' | 'api_key' | 'group', id: number) =>
  new ApiError(`mc_dm_api_error.${kind}_not_found`, `The requested ${kind.replace('_', ' ')} (${id}) could not be found.`, { [`${kind}_id`]: id });

export const noPermission = (what = 'do that') =>
  new ApiError('do_not_have_permission', `You do not have permission to ${what}.`);

export const invalidInput = (field: string, message: string) =>
  new ApiError('invalid_input', message, { field });

export const requiredMissing = (missing: string[]) =>
  new ApiError('required_input_missing', `Please provide: ${missing.join(', ')}.`, { missing });

/** The body shape of every error answer (REST and, in extensions, GraphQL). */
export interface ErrorBodyItem { code: string; message: string; params: ErrorParams }

/** SQLSTATEs that mean another transaction got in the way: deadlock, serialization failure, a lock not had in time. */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001', '55P03']);

/**
 * The answer to a write the database gave up on because of a concurrent one (or a transaction that could not start
 * in time): nothing was changed and the same request can simply be sent again, so it is 503 `server_busy` with
 * Retry-After rather than a 500. Null for any other error.
 */
export function databaseConflict(err: unknown): ApiError | null {
  const e = err as { code?: unknown; message?: unknown; cause?: { originalCode?: unknown; code?: unknown; kind?: unknown } } | null;
  if (!e || typeof e !== 'object') return null;
  const sqlstate = e.cause?.originalCode ?? e.cause?.code ?? e.code;
  const conflict = (typeof sqlstate === 'string' && CONFLICT_SQLSTATES.has(sqlstate))
    || e.cause?.kind === 'TransactionWriteConflict'
    || e.code === 'P2034' // Prisma: "Transaction failed due to a write conflict or a deadlock"
    || (e.code === 'P2028' && /unable to start a transaction/i.test(String(e.message)));
  if (!conflict) return null;
  return new ApiError('server_busy', 'The database gave up on this change because of another one made at the same moment; nothing was changed. Send the request again.',
    { retry_after: 1 }, { 'Retry-After': '1' });
}

export function toErrorItem(err: unknown): ErrorBodyItem {
  const busy = databaseConflict(err);
  if (busy) return toErrorItem(busy);
  if (err instanceof GraphQLError) {
    const ext = err.extensions ?? {};
    const code = typeof ext.code === 'string' ? ext.code : undefined;
    if (code && code !== 'INTERNAL_SERVER_ERROR') {
      return { code, message: err.message, params: (ext.params as ErrorParams) ?? {} };
    }
    if (err.originalError && err.originalError !== err) return toErrorItem(err.originalError);
    // graphql-js validation and variable coercion errors have no code: they are bad input.
    if (!err.originalError) return { code: 'invalid_input', message: err.message, params: {} };
  }
  return { code: 'server_error', message: 'An unexpected error occurred. It has been logged.', params: {} };
}

/** Why the service could not start, in one line an operator can act on (printed without a stack trace). */
export class StartError extends Error {}

/** Response headers an error asks for (Retry-After and RateLimit-* on 429), as Yoga honours them on /graphql. */
export function headersOf(err: unknown): Record<string, string> | undefined {
  const ext = (err as { extensions?: { http?: { headers?: Record<string, string> } } } | null)?.extensions;
  if (ext?.http?.headers) return ext.http.headers;
  // An error raised inside a resolver comes wrapped: a database conflict under it still asks for Retry-After.
  const busy = databaseConflict((err as { originalError?: unknown } | null)?.originalError ?? err);
  return busy ? headersOf(busy) : undefined;
}
