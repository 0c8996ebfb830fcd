// The REST adapter as a Yoga plugin: requests under /api/ are matched against the route table, turned into
// variables, executed in-process against the schema (no HTTP hop), and answered in the spec's envelopes.
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import {
  Kind,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { ApiError, headersOf, toErrorItem, type ErrorBodyItem } from '../src/errors.js';
import { runWithinLimits } from '../src/graphql/limits.js';
import { drainRefusedBody } from '../src/input/drain.js';
import { ownUtf8 } from '../src/bytes.js';
import { addPairs, Opaque, toVariables, type Raw, type RawFields } from './inputs.js';
import { envelope, errorBody } from './envelope.js';
import type { Route } from './routes.js';
import { enumTree, lowerEnums, type EnumTree } from './enums.js';
import { routeOperation, type RunOperation } from './execute.js';
import type { OperationSignal } from '../src/db/operation-signal.js';

interface CompiledRoute extends Route {
  pattern: RegExp;
  operation: OperationDefinitionNode;
  rootField: string;
  enums: EnumTree;
  /** Executes the route's document (compiled on first use). */
  run: RunOperation;
  /** A GET route whose operation is a query: its answers may be kept (options.readCache). */
  cacheable: boolean;
}

/**
 * The problems of each route's operation against the schema (none when every document is valid). Not run at start:
 * validating every document costs a noticeable part of the start-up time, and the documents only change with the
 * code, which `npm run generate` (codegen validates them) and the test suite (test/rest-documents.test.ts) check.
 */
export function routeProblems(schema: GraphQLSchema, routes: Route[]): string[] {
  return routes.flatMap((route) =>
    validate(schema, route.document as DocumentNode).map(
      (p) => `REST route ${route.method} ${route.path}: its operation does not match the schema: ${p.message}`,
    ),
  );
}

/** Parses nothing at request time: the documents are parsed into the route table at build time (codegen). */
export function compileRoutes(
  schema: GraphQLSchema,
  routes: Route[],
  onFallback: (route: Route, reason: unknown) => void = () => {},
): CompiledRoute[] {
  return routes.map((route) => {
    const doc = route.document as DocumentNode;
    const operation = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    const root = operation?.selectionSet.selections[0];
    if (!operation || !root || root.kind !== Kind.FIELD)
      throw new Error(`REST route ${route.method} ${route.path}: no operation with a root field.`);
    const source = route.path
      .replace(/\/+$/, '')
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:([a-z_]+)/g, '(?<$1>[^/]+)');
    const rootField = root.alias?.value ?? root.name.value;
    const enums = (enumTree(schema, doc, operation).get(rootField) as EnumTree | undefined) ?? new Map();
    const run = routeOperation(schema, doc, (reason) => onFallback(route, reason));
    const cacheable = route.method === 'GET' && operation.operation === 'query' && !route.upload;
    return { ...route, pattern: new RegExp(`^${source}/?$`), operation, rootField, enums, run, cacheable };
  });
}

export interface RestAdapterOptions {
  schema: GraphQLSchema;
  routes: Route[];
  /** Builds the GraphQL context for a request (resolves the key and visitor); throws ApiError on 401/403. */
  contextFor(request: Request): Promise<unknown>;
  maxBodyBytes: number;
  /** Most non-file fields one multipart request may carry. */
  maxFields: number;
  /** How much of a refused request's unread body is dropped so that its sender reads the answer (REFUSED_BODY_DRAIN_BYTES). */
  drainBytes?: number;
  /** Refuses (throws ApiError 403) a context lacking a route's `scopes`, before the body is read. */
  requireScopes(context: unknown, scopes: readonly string[]): void;
  /** For upload routes: decides from the fields before the file part whether the file may be stored. */
  beforeUpload?(context: unknown, fields: RawFields): Promise<void>;
  /** Takes an upload slot (or throws 503 server_busy); returns its release. */
  acquireUploadSlot?(): () => void;
  /**
   * Waits for the operation's turn to run (src/http/fair-share.ts) once the body has arrived; rejects with the
   * signal's reason if the deadline passes first. Returns the slot's release.
   */
  admit?(context: unknown, signal: OperationSignal): Promise<() => void>;
  /**
   * Answers of GET routes kept while what they read is unchanged (src/http/read-cache.ts): `key` names the route and
   * its variables; the lookup adds who asks. A miss is either stored or dropped (after a store, drop does nothing);
   * `passed`: the answer will not be kept whatever it is (its key is not admitted yet).
   */
  readCache?: {
    /** `operation`: the route's document and variables (what the answer is about decides what evicts it). */
    lookup(
      context: unknown,
      key: string,
      operation: { document: DocumentNode; variables: Record<string, unknown> },
    ): Promise<{ value: Uint8Array } | { store(value: Uint8Array, bytes: number): void; drop(): void; passed?: true }>;
  };
  /** Execution deadline in ms (GRAPHQL_TIMEOUT_MS), read on each request: past it the route answers 503 operation_timeout. */
  limits: { timeoutMs: number; maxResponseBytes?: number };
  /**
   * Receives the file part of an upload route while the request streams in; returns the variable value and a
   * cleanup run after the operation (whatever its outcome).
   */
  receiveUpload?(
    file: Readable,
    info: { filename: string; mimeType: string },
  ): Promise<{ value: unknown; cleanup(): Promise<void> }>;
  /** Called with errors that are not part of the contract (they answer 500 server_error). */
  onUnexpectedError(err: unknown): void;
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  const tooLarge = () =>
    new ApiError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`, { limit });
  if (declared > limit) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

type Receiver = NonNullable<RestAdapterOptions['receiveUpload']>;

interface UploadPlan {
  field: string;
  /** Fields that must arrive before the file part (query string included). */
  before: readonly string[];
  /** Decides from those fields whether the file may be stored at all (scope, permission, limits). */
  check(fields: RawFields): Promise<void>;
  receive: Receiver;
  cleanups: (() => Promise<void>)[];
}

const tooLarge = (message: string, params: Record<string, unknown>) =>
  new ApiError('request_too_large', message, params);

function multipartParser(request: Request, limits: busboy.Limits): busboy.Busboy {
  try {
    return busboy({
      headers: { 'content-type': request.headers.get('content-type')! },
      limits,
      defParamCharset: 'utf8',
    });
  } catch (err) {
    throw new ApiError('invalid_input', `The multipart body cannot be read: ${(err as Error).message}.`, {
      field: 'body',
    });
  }
}

/**
 * Streams a multipart body: fields into `raw`, the upload's file part through `receive`; other file parts are
 * skipped. Memory is bounded before anything is read: at most `maxFields` fields, `maxFieldBytes` for all of them
 * together (busboy stops each at that size too), one file part. The fields the upload plan names must come
 * before the file, whose bytes are stored only after `check` passed on them.
 */
function streamMultipart(
  request: Request,
  source: Readable,
  raw: RawFields,
  upload: UploadPlan,
  maxFieldBytes: number,
  maxFields: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const bb = multipartParser(request, {
      fieldSize: maxFieldBytes,
      fields: maxFields,
      files: 1,
      parts: maxFields + 1,
    });
    let failed = false;
    /** The file part being received: a refusal ends it, so that its temporary file is removed at once. */
    let receiving: Readable | undefined;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      source.unpipe(bb); // the rest of the body is the caller's to drain or drop (see dropBehind, linger)
      receiving?.destroy(err instanceof Error ? err : new Error(String(err)));
      reject(err);
    };
    const pending: Promise<void>[] = [];
    let fieldBytes = 0;
    bb.on('field', (name, value, info) => {
      if (failed) return;
      fieldBytes += Buffer.byteLength(name) + Buffer.byteLength(value);
      if (info.valueTruncated || fieldBytes > maxFieldBytes) {
        return fail(
          tooLarge(`The form fields of this request are larger than the limit of ${maxFieldBytes} bytes in all.`, {
            field: name,
            limit: maxFieldBytes,
          }),
        );
      }
      addPairs(raw, [[name, value]]);
    });
    bb.on('fieldsLimit', () =>
      fail(tooLarge(`A request may carry at most ${maxFields} form fields.`, { limit: maxFields })),
    );
    bb.on('partsLimit', () =>
      fail(tooLarge(`A request may carry at most ${maxFields} form fields and one file.`, { limit: maxFields })),
    );
    bb.on('filesLimit', () =>
      fail(
        new ApiError('invalid_input', `Send one file per request (the field ${upload.field}).`, {
          field: upload.field,
        }),
      ),
    );
    bb.on('file', (name, stream, info) => {
      if (failed || name !== upload.field) {
        stream.resume();
        return;
      }
      const early = upload.before.filter((f) => !raw.has(f));
      const step = (async () => {
        if (early.length > 0) {
          throw new ApiError(
            'required_input_missing',
            `Please provide: ${early.join(', ')} (before the ${name} part of the form).`,
            { missing: early },
          );
        }
        await upload.check(raw);
        receiving = stream;
        const r = await upload.receive(stream, { filename: info.filename ?? '', mimeType: info.mimeType });
        receiving = undefined;
        // Received whole, but the request was refused meanwhile (a malformed part after the file): nobody else
        // will remove it.
        if (failed) return void (await r.cleanup());
        upload.cleanups.push(r.cleanup);
        raw.set(name, new Opaque(r.value));
      })();
      step.catch((err) => {
        stream.resume();
        fail(err);
      });
      pending.push(step);
    });
    bb.on('close', () => {
      Promise.all(pending).then(() => {
        if (!failed) resolve();
      }, fail);
    });
    bb.on('error', (err: Error) =>
      fail(new ApiError('invalid_input', `The multipart body is malformed: ${err.message}.`, { field: 'body' })),
    );
    source.on('error', (err) =>
      fail(new ApiError('invalid_input', `The request body could not be read: ${err.message}.`, { field: 'body' })),
    );
    source.pipe(bb);
  });
}

/** Query string, then the body (form, multipart or JSON), then path parameters: later sources win. */
/** The request body as a Node stream, made once per request (so a refused body can still be drained). */
const sources = new WeakMap<Request, Readable>();
function bodySource(request: Request): Readable {
  let s = sources.get(request);
  if (!s) {
    s = Readable.from(request.body as unknown as AsyncIterable<Uint8Array>);
    sources.set(request, s);
  }
  return s;
}

/** How much of a refused body is read and dropped so that the client, still sending, can read the answer. */
const LINGER_BYTES = 1024 * 1024;
const LINGER_MS = 500;

/**
 * Drops the rest of a refused body, up to LINGER_BYTES within LINGER_MS (nothing is kept); true when the body
 * ended (the connection can be reused), false when it is closed after the answer instead.
 */
function linger(request: Request): Promise<boolean> {
  if (!request.body) return Promise.resolve(true);
  let source: Readable;
  try {
    source = bodySource(request);
  } catch {
    return Promise.resolve(false);
  }
  if (source.readableEnded) return Promise.resolve(true);
  if (source.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    let read = 0;
    const done = (ended: boolean) => {
      clearTimeout(timer);
      source.off('data', onData);
      if (!ended) source.pause();
      resolve(ended);
    };
    const onData = (chunk: Uint8Array) => {
      read += chunk.byteLength;
      if (read > LINGER_BYTES) done(false);
    };
    const timer = setTimeout(() => done(false), LINGER_MS);
    source.on('data', onData);
    source.once('end', () => done(true));
    source.once('error', () => done(false));
    source.resume();
  });
}

/**
 * Drops the rest of a body refused while it was being read, behind its answer: up to `limit` bytes are read and
 * dropped (nothing is kept), then `close` is called if the body goes on. Meanwhile the sender, still sending, reads
 * the answer: closing at once, with its bytes unread, made the kernel answer with a reset that could overtake the
 * answer (the sender then saw no answer at all).
 */
function dropBehind(request: Request, limit: number, close: () => void): void {
  let source: Readable;
  try {
    source = bodySource(request);
  } catch {
    close();
    return;
  }
  if (source.readableEnded) return;
  if (source.destroyed) {
    close();
    return;
  }
  let read = 0;
  const onData = (chunk: Uint8Array) => {
    read += chunk.byteLength;
    if (read <= limit) return;
    source.off('data', onData);
    source.pause();
    close();
  };
  source.on('data', onData);
  source.once('end', () => source.off('data', onData));
  source.once('error', () => source.off('data', onData));
  source.resume();
}

/** The body types a REST route reads. */
const REST_BODY_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'application/json'];

async function requestFields(
  request: Request,
  url: URL,
  pathParams: Record<string, string>,
  limits: { maxBodyBytes: number; maxFields: number },
  upload: UploadPlan | null,
): Promise<RawFields> {
  const { maxBodyBytes } = limits;
  const raw: RawFields = new Map();
  addPairs(raw, url.searchParams);
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (upload && type === 'multipart/form-data' && request.body) {
    await streamMultipart(request, bodySource(request), raw, upload, maxBodyBytes, limits.maxFields);
  } else if (request.method !== 'GET' && request.method !== 'HEAD') {
    const bytes = await readLimited(request, maxBodyBytes);
    if (bytes.byteLength > 0) {
      if (type === 'application/json') {
        let json: unknown;
        try {
          json = JSON.parse(Buffer.from(bytes).toString('utf8'));
        } catch {
          throw new ApiError('invalid_input', 'The request body is not valid JSON.', { field: 'body' });
        }
        if (json === null || typeof json !== 'object' || Array.isArray(json)) {
          throw new ApiError('invalid_input', 'A JSON request body must be an object of fields.', { field: 'body' });
        }
        for (const [k, v] of Object.entries(json)) raw.set(k.replace(/\[\]$/, ''), v as Raw);
      } else if (type === 'application/x-www-form-urlencoded') {
        addPairs(raw, new URLSearchParams(Buffer.from(bytes).toString('utf8')));
      } else if (type === 'multipart/form-data') {
        let form: FormData;
        try {
          form = await new Response(bytes as unknown as BodyInit, {
            headers: { 'content-type': request.headers.get('content-type')! },
          }).formData();
        } catch (err) {
          throw new ApiError('invalid_input', `The multipart body cannot be read: ${(err as Error).message}.`, {
            field: 'body',
          });
        }
        addPairs(
          raw,
          [...form].filter((e): e is [string, string] => typeof e[1] === 'string'),
        );
      } else {
        throw new ApiError(
          'unsupported_media_type',
          `${type ? `A ${type} body` : 'A body without a Content-Type'} is not read here: send application/x-www-form-urlencoded, multipart/form-data or application/json.`,
          { content_type: type, accepted: REST_BODY_TYPES },
        );
      }
    }
  }
  for (const [k, v] of Object.entries(pathParams)) {
    try {
      raw.set(k, decodeURIComponent(v));
    } catch {
      throw new ApiError('invalid_input', `${k} is not a valid path segment.`, { field: k });
    }
  }
  return raw;
}

/**
 * The server's own Response class (Yoga's fetch ponyfill, set on each request): it writes string bodies straight to
 * the socket, where a platform Response would be read back through a web stream.
 */
let ResponseImpl: typeof Response = Response;

function jsonText(status: number, text: string | Uint8Array, headers: Record<string, string> = {}): Response {
  return new ResponseImpl(text as BodyInit, {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return jsonText(status, JSON.stringify(body), headers);
}

/** `format=csv` asks a route with a `csv` option for CSV; `json` or no format, JSON; anything else is invalid_input. */
function wantsCsv(url: URL): boolean {
  const format = url.searchParams.get('format');
  if (format === null || format === 'json') return false;
  if (format === 'csv') return true;
  throw new ApiError('invalid_input', `format must be json or csv, got "${format.slice(0, 40)}".`, {
    field: 'format',
  });
}

/** One CSV cell: quoted when it holds a comma, a quote or a line break. */
const csvCell = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};

function csvText(columns: string[], rows: unknown): Response {
  const lines = [columns.join(',')];
  for (const row of Array.isArray(rows) ? rows : []) {
    lines.push(columns.map((c) => csvCell((row as Record<string, unknown>)[c])).join(','));
  }
  return new ResponseImpl(`${lines.join('\r\n')}\r\n`, {
    status: 200,
    headers: { 'content-type': 'text/csv; charset=utf-8' },
  });
}

function fail(items: ErrorBodyItem[], headers?: Record<string, string>): Response {
  const { status, body } = errorBody(items);
  return json(status, body, headers);
}

export function restAdapter(options: RestAdapterOptions): Plugin {
  const compiled = compileRoutes(options.schema, options.routes, (route, reason) =>
    options.onUnexpectedError(
      new Error(
        `REST route ${route.method} ${route.path}: graphql-jit cannot compile its document, so it runs on the interpreting executor: ${String((reason as Error)?.message ?? reason)}`,
      ),
    ),
  );

  const itemOf = (err: unknown): ErrorBodyItem => {
    const item = toErrorItem(err);
    if (item.code === 'server_error') options.onUnexpectedError(err);
    return item;
  };

  // The routes under each resource (the path segment after /api/, literal in every route), in their order: a request
  // tries the patterns of its resource's routes only, not every route's.
  const segment = (path: string) => path.split('/', 3)[2] ?? '';
  const byResource = new Map<string, CompiledRoute[]>();
  for (const r of compiled) {
    const key = segment(r.path);
    if (key.startsWith(':'))
      throw new Error(`REST route ${r.method} ${r.path}: the segment after /api/ must be literal.`);
    byResource.set(key, [...(byResource.get(key) ?? []), r]);
  }

  async function handle(request: Request, url: URL, nodeRequest?: IncomingMessage): Promise<Response> {
    const candidates: { r: CompiledRoute; m: RegExpExecArray }[] = [];
    for (const r of byResource.get(segment(url.pathname)) ?? []) {
      const m = r.pattern.exec(url.pathname);
      if (m) candidates.push({ r, m });
    }
    if (candidates.length === 0) {
      return fail([{ code: 'endpoint_not_found', message: `No API endpoint at ${url.pathname}.`, params: {} }]);
    }
    const hit = candidates.find((c) => c.r.method === request.method);
    if (!hit) {
      const allow = [...new Set(candidates.map((c) => c.r.method))].join(', ');
      return fail(
        [
          {
            code: 'method_not_allowed',
            message: `${request.method} is not allowed here; use ${allow}.`,
            params: { allowed: allow.split(', ') },
          },
        ],
        { allow },
      );
    }
    const cleanups: (() => Promise<void>)[] = [];
    let release: (() => void) | undefined;
    let unkept: (() => void) | undefined;
    let bodyRead = !request.body;
    try {
      // The key and the route's scopes are decided from the headers alone: a refused request's body is never read.
      const contextValue = await options.contextFor(request);
      if (hit.r.scopes) options.requireScopes(contextValue, hit.r.scopes);
      const streaming = Boolean(
        hit.r.upload &&
          options.receiveUpload &&
          /^multipart\/form-data/i.test(request.headers.get('content-type') ?? ''),
      );
      if (streaming && options.acquireUploadSlot) release = options.acquireUploadSlot();
      const upload: UploadPlan | null =
        hit.r.upload && options.receiveUpload
          ? {
              field: hit.r.upload,
              before: hit.r.uploadAfter ?? [],
              receive: options.receiveUpload,
              cleanups,
              check: (fields) => options.beforeUpload?.(contextValue, fields) ?? Promise.resolve(),
            }
          : null;
      const raw = await requestFields(
        request,
        url,
        { ...hit.m!.groups },
        { maxBodyBytes: options.maxBodyBytes, maxFields: options.maxFields },
        upload,
      );
      bodyRead = true;
      const variableValues = toVariables(options.schema, hit.r.operation, raw);
      const csv = hit.r.csv ? wantsCsv(url) : false;
      let kept =
        hit.r.cacheable && !csv && options.readCache
          ? await options.readCache.lookup(
              contextValue,
              `rest\0${hit.r.method} ${hit.r.path}\0${JSON.stringify(variableValues)}`,
              { document: hit.r.document as DocumentNode, variables: variableValues },
            )
          : undefined;
      if (kept && 'value' in kept) return jsonText(200, kept.value);
      if (kept?.passed) kept = undefined; // asked for the first time: nothing to keep
      if (kept) unkept = kept.drop;
      // Admitted within the deadline (a wait for a fair-share slot counts towards it); the slot is held until the work
      // really ends, even when the answer went out at the deadline.
      const result: ExecutionResult = await runWithinLimits(
        options.limits,
        contextValue,
        request.signal,
        async (signal) => {
          const admitted = await options.admit?.(contextValue, signal);
          try {
            return await hit.r.run(variableValues, contextValue, signal);
          } finally {
            admitted?.();
          }
        },
      );
      if (result.errors?.length) return fail(result.errors.map(itemOf), headersOf(result.errors[0]));
      const enveloped = envelope(hit.r.envelope, lowerEnums(result.data?.[hit.r.rootField], hit.r.enums), hit.r.spread);
      if (csv) return csvText(hit.r.csv!, enveloped[hit.r.envelope]);
      const body = JSON.stringify(enveloped);
      if (!kept) return jsonText(200, body);
      // Kept as UTF-8 bytes, written as they are on every hit (a string would be encoded again each time).
      const bytes = ownUtf8(body);
      kept.store(bytes, bytes.length);
      return jsonText(200, bytes);
    } catch (err) {
      // A body refused before any of it was read is dropped after the answer, up to REFUSED_BODY_DRAIN_BYTES
      // (src/input/drain.ts).
      if (!bodyRead && nodeRequest && !sources.has(request)) {
        setImmediate(() => drainRefusedBody(nodeRequest, options.drainBytes ?? LINGER_BYTES));
        return fail([itemOf(err)], headersOf(err));
      }
      // One refused while it was being read (an upload refused after its first fields) is answered at once too, and
      // the rest dropped behind the answer, up to the same limit.
      if (!bodyRead && nodeRequest) {
        const socket = nodeRequest.socket;
        setImmediate(() => dropBehind(request, options.drainBytes ?? LINGER_BYTES, () => socket?.destroy()));
        return fail([itemOf(err)], headersOf(err));
      }
      // Without a socket (a request handed to the app's fetch handler): drained a little first, else closed.
      const close: Record<string, string> = bodyRead || (await linger(request)) ? {} : { connection: 'close' };
      return fail([itemOf(err)], { ...headersOf(err), ...close });
    } finally {
      release?.();
      unkept?.();
      await Promise.all(cleanups.map((c) => c().catch(() => {})));
    }
  }

  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      if (url.pathname !== '/api' && !url.pathname.startsWith('/api/')) return;
      ResponseImpl = fetchAPI.Response;
      endResponse(await handle(request, url, (serverContext as { req?: IncomingMessage } | undefined)?.req));
    },
  };
}
