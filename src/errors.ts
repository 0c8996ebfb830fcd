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
  unsupported_media_type: 415,
  operation_too_expensive: 400,
  operation_timeout: 503,
  persisted_document_required: 400,
  persisted_document_not_found: 400,
  PERSISTED_QUERY_NOT_FOUND: 400,
  'mc_dm_api_error.rate_limited': 429,
  server_error: 500,
  server_busy: 503,
  server_starting: 503,
  service_unavailable: 503,
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
  constructor(
    code: string,
    message: string,
    params: ErrorParams = {},
    headers?: Record<string, string>,
    status?: number,
  ) {
    // A refusal the contract names (a 404, a 403, an input to correct) is an answer, not a fault: it carries no stack
    // trace, which V8 would collect here and format again where graphql-js wraps the error, on every refused request.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, {
        extensions: { code, params, http: { status: status ?? statusOf(code), ...(headers ? { headers } : {}) } },
      });
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
    this.params = params;
  }
}

export const notFound = (
  kind:
    | 'category'
    | 'download'
    | 'comment'
    | 'file'
    | 'version'
    | 'user'
    | 'prefix'
    | 'api_key'
    | 'group'
    | 'review'
    | 'report',
  id: number,
) =>
  new ApiError(
    `mc_dm_api_error.${kind}_not_found`,
    `The requested ${kind.replace('_', ' ')} (${id}) could not be found.`,
    { [`${kind}_id`]: id },
  );

export const noPermission = (what = 'do that') =>
  new ApiError('do_not_have_permission', `You do not have permission to ${what}.`);

export const invalidInput = (field: string, message: string) => new ApiError('invalid_input', message, { field });

export const requiredMissing = (missing: string[]) =>
  new ApiError('required_input_missing', `Please provide: ${missing.join(', ')}.`, { missing });

/** The body shape of every error answer (REST and, in extensions, GraphQL). */
export interface ErrorBodyItem {
  code: string;
  message: string;
  params: ErrorParams;
}

/** How the message of a transaction rolled back under a running statement (src/db/transactions.ts) begins. */
export const TRANSACTION_CUT_OFF = 'Transaction already closed: it was rolled back (its timeout passed';

/** SQLSTATEs that mean another transaction got in the way: deadlock, serialization failure, a lock not had in time. */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001', '55P03']);

/**
 * The answer to a write the database gave up on because of a concurrent one (or a transaction that could not start
 * in time): nothing was changed and the same request can simply be sent again, so it is 503 `server_busy` with
 * Retry-After rather than a 500. Null for any other error.
 */
export function databaseConflict(err: unknown): ApiError | null {
  const e = err as {
    code?: unknown;
    message?: unknown;
    cause?: { originalCode?: unknown; code?: unknown; kind?: unknown };
  } | null;
  if (!e || typeof e !== 'object') return null;
  const sqlstate = e.cause?.originalCode ?? e.cause?.code ?? e.code;
  const conflict =
    (typeof sqlstate === 'string' && CONFLICT_SQLSTATES.has(sqlstate)) ||
    e.cause?.kind === 'TransactionWriteConflict' ||
    e.code === 'P2034' || // Prisma: "Transaction failed due to a write conflict or a deadlock"
    (e.code === 'P2028' && /unable to start a transaction/i.test(String(e.message)));
  // A transaction the database or Prisma rolled back because its time ran out (a busy machine): nothing was changed
  // either, and the same request may well pass a moment later.
  const expired =
    (e.code === 'P2028' && /expired transaction|its timeout passed/i.test(String(e.message))) ||
    (typeof e.message === 'string' && e.message.startsWith(TRANSACTION_CUT_OFF));
  if (expired) {
    return new ApiError(
      'server_busy',
      'The database took too long to make this change (the service is busy) and rolled it back; nothing was changed. Send the request again.',
      { retry_after: 1 },
      { 'Retry-After': '1' },
    );
  }
  if (!conflict) return null;
  return new ApiError(
    'server_busy',
    'The database gave up on this change because of another one made at the same moment; nothing was changed. Send the request again.',
    { retry_after: 1 },
    { 'Retry-After': '1' },
  );
}

/** Seconds a client is asked to wait (Retry-After) when the database cannot be reached. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Node socket errors meaning the database server cannot be reached (or went away under a statement). */
const UNREACHABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
]);
/** Driver-adapter error kinds (@prisma/adapter-pg) of the same meaning. */
const UNREACHABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/** Prisma's codes: server unreachable, connect timeout, operation timeout, server closed the connection, no pool slot in time. */
const UNREACHABLE_PRISMA = new Set(['P1001', 'P1002', 'P1008', 'P1017']);
/** node-postgres and PostgreSQL messages of a connection lost or refused (node-postgres throws plain Errors for some). */
const UNREACHABLE_MESSAGE =
  /Connection terminated|Client has encountered a connection error|Can't reach database server|Server has closed the connection|timeout exceeded when trying to connect|^timeout expired$|connection timeout|not currently accepting connections|the database system is (starting up|shutting down|in recovery|not yet accepting connections)|terminating connection due to administrator command|The database server ended this connection/i;

/** Whether `sqlstate` means the server is unreachable or refusing sessions: class 08, admin/crash shutdown, cannot connect now, too many connections. */
const unreachableState = (sqlstate: unknown) =>
  typeof sqlstate === 'string' &&
  (sqlstate.startsWith('08') ||
    sqlstate === '57P01' ||
    sqlstate === '57P02' ||
    sqlstate === '57P03' ||
    sqlstate === '53300');

/** Whether `err` (or what it wraps) says the database cannot be reached, as opposed to a defect or bad input. */
export function isDatabaseUnreachable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 6) return false;
  const e = err as {
    code?: unknown;
    kind?: unknown;
    originalCode?: unknown;
    message?: unknown;
    cause?: unknown;
    originalError?: unknown;
    errors?: unknown;
    meta?: { driverAdapterError?: unknown };
  };
  if (
    typeof e.code === 'string' &&
    (UNREACHABLE_ERRNOS.has(e.code) || UNREACHABLE_PRISMA.has(e.code) || unreachableState(e.code))
  )
    return true;
  if (typeof e.kind === 'string' && UNREACHABLE_KINDS.has(e.kind)) return true;
  if (unreachableState(e.originalCode)) return true;
  if (typeof e.message === 'string' && UNREACHABLE_MESSAGE.test(e.message)) return true;
  const inner = [e.cause, e.originalError, e.meta?.driverAdapterError, ...(Array.isArray(e.errors) ? e.errors : [])];
  return inner.some((i) => i !== err && isDatabaseUnreachable(i, depth + 1));
}

/**
 * The answer to a request that needed the database while it could not be reached: 503 `service_unavailable` with
 * Retry-After (never a 500: nothing is wrong with the request, and the service recovers by itself when the database
 * returns). The message names no host, port or credential. Null for any other error.
 */
export function databaseUnavailable(err: unknown): ApiError | null {
  if (err instanceof ApiError || !isDatabaseUnreachable(err)) return null;
  return new ApiError(
    'service_unavailable',
    'The database cannot be reached right now; try again in a moment.',
    { retry_after: OUTAGE_RETRY_AFTER_SECONDS },
    { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
  );
}

export function toErrorItem(err: unknown): ErrorBodyItem {
  const busy = databaseConflict(err) ?? databaseUnavailable(err);
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

/**
 * What an operation stops with when its client went away (the request's signal aborted): nobody reads the answer, so
 * it is the deadline's code, and it is no defect: it is logged at info, in one line, without a stack.
 */
export class ClientGone extends ApiError {
  constructor() {
    super('operation_timeout', 'The client went away before the answer was ready; the operation was stopped.', {});
  }
}

/**
 * Whether `err` (or what it wraps) is a client going away: ClientGone, or the AbortError (a DOMException) the HTTP
 * layer aborts a request's signal with when its connection closes.
 */
export function isClientGone(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (err instanceof ClientGone) return true;
  const e = err as { name?: unknown; originalError?: unknown; cause?: unknown };
  if (e.name === 'AbortError') return true;
  return [e.originalError, e.cause].some((i) => i !== err && isClientGone(i, depth + 1));
}

/** Why the service could not start, in one line an operator can act on (printed without a stack trace). */
export class StartError extends Error {}

/** Response headers an error asks for (Retry-After and RateLimit-* on 429), as Yoga honours them on /graphql. */
export function headersOf(err: unknown): Record<string, string> | undefined {
  const ext = (err as { extensions?: { http?: { headers?: Record<string, string> } } } | null)?.extensions;
  if (ext?.http?.headers) return ext.http.headers;
  // An error raised inside a resolver comes wrapped: a database conflict under it still asks for Retry-After.
  const inner = (err as { originalError?: unknown } | null)?.originalError ?? err;
  const busy = databaseConflict(inner) ?? databaseUnavailable(inner);
  return busy ? headersOf(busy) : undefined;
}
