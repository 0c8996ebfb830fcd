// The REST adapter as a Yoga plugin: requests under /api/ are matched against the route table, turned into
// variables, executed in-process against the schema (no HTTP hop), and answered in the spec's envelopes.
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { Kind, validate, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
// The executor Yoga itself runs on /graphql: both faces execute operations the same way.
import { normalizedExecutor } from '@graphql-tools/executor';
import { ApiError, toErrorItem, type ErrorBodyItem } from '../src/errors.js';
import { deadline } from '../src/http/limits.js';
import { addPairs, Opaque, toVariables, type Raw, type RawFields } from './inputs.js';
import { envelope, errorBody } from './envelope.js';
import type { Route } from './routes.js';
import { enumTree, lowerEnums, type EnumTree } from './enums.js';

interface CompiledRoute extends Route {
  pattern: RegExp;
  operation: OperationDefinitionNode;
  rootField: string;
  enums: EnumTree;
}

/** Parses nothing at request time: every document is validated against the schema once, here. */
export function compileRoutes(schema: GraphQLSchema, routes: Route[]): CompiledRoute[] {
  return routes.map((route) => {
    const doc = route.document as DocumentNode;
    const problems = validate(schema, doc);
    if (problems.length > 0) {
      throw new Error(`REST route ${route.method} ${route.path}: its operation does not match the schema: ${problems.map((p) => p.message).join('; ')}`);
    }
    const operation = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    const root = operation?.selectionSet.selections[0];
    if (!operation || !root || root.kind !== Kind.FIELD) throw new Error(`REST route ${route.method} ${route.path}: no operation with a root field.`);
    const source = route.path.replace(/\/+$/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:([a-z_]+)/g, '(?<$1>[^/]+)');
    const rootField = root.alias?.value ?? root.name.value;
    const enums = (enumTree(schema, doc, operation).get(rootField) as EnumTree | undefined) ?? new Map();
    return { ...route, pattern: new RegExp(`^${source}/?$`), operation, rootField, enums };
  });
}

export interface RestAdapterOptions {
  schema: GraphQLSchema;
  routes: Route[];
  /** Builds the GraphQL context for a request (resolves the key and visitor); throws ApiError on 401/403. */
  contextFor(request: Request): Promise<unknown>;
  maxBodyBytes: number;
  /** Execution deadline in ms (GRAPHQL_TIMEOUT_MS), read on each request: past it the route answers 503 operation_timeout. */
  limits: { timeoutMs: number };
  /**
   * Receives the file part of an upload route while the request streams in; returns the variable value and a
   * cleanup run after the operation (whatever its outcome).
   */
  receiveUpload?(file: Readable, info: { filename: string; mimeType: string }): Promise<{ value: unknown; cleanup(): Promise<void> }>;
  /** Called with errors that are not part of the contract (they answer 500 server_error). */
  onUnexpectedError(err: unknown): void;
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  const tooLarge = () => new ApiError('request_too_large', `The request body is larger than the limit of ${limit} bytes.`, { limit });
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

/** Streams a multipart body: fields into `raw`, the `uploadField` part through `receive`; other file parts are skipped. */
function streamMultipart(request: Request, raw: RawFields, uploadField: string, receive: Receiver, maxFieldBytes: number, cleanups: (() => Promise<void>)[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const source = Readable.from(request.body as unknown as AsyncIterable<Uint8Array>);
    const fail = (err: unknown) => { source.unpipe(); reject(err); };
    const bb = busboy({ headers: { 'content-type': request.headers.get('content-type')! }, limits: { fieldSize: maxFieldBytes, files: 1, parts: 500 }, defParamCharset: 'utf8' });
    const pending: Promise<void>[] = [];
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) return fail(new ApiError('request_too_large', `The field ${name} is larger than ${maxFieldBytes} bytes.`, { field: name }));
      addPairs(raw, [[name, value]]);
    });
    bb.on('file', (name, stream, info) => {
      if (name !== uploadField) { stream.resume(); return; }
      pending.push(receive(stream, { filename: info.filename ?? '', mimeType: info.mimeType }).then((r) => {
        cleanups.push(r.cleanup);
        raw.set(name, new Opaque(r.value));
      }));
      pending.at(-1)!.catch(fail);
    });
    bb.on('close', () => { Promise.all(pending).then(() => resolve(), fail); });
    bb.on('error', (err: Error) => fail(new ApiError('invalid_input', `The multipart body is malformed: ${err.message}.`, { field: 'body' })));
    source.on('error', fail);
    source.pipe(bb);
  });
}

/** Query string, then the body (form, multipart or JSON), then path parameters: later sources win. */
async function requestFields(
  request: Request, url: URL, pathParams: Record<string, string>, maxBodyBytes: number,
  upload: { field: string; receive: Receiver; cleanups: (() => Promise<void>)[] } | null,
): Promise<RawFields> {
  const raw: RawFields = new Map();
  addPairs(raw, url.searchParams);
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (upload && type === 'multipart/form-data' && request.body) {
    await streamMultipart(request, raw, upload.field, upload.receive, maxBodyBytes, upload.cleanups);
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
        const form = await new Response(bytes as unknown as BodyInit, { headers: { 'content-type': request.headers.get('content-type')! } }).formData();
        addPairs(raw, [...form].filter((e): e is [string, string] => typeof e[1] === 'string'));
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

/** Response headers an error asks for (Retry-After on 429), as Yoga honours them on /graphql. */
function headersOf(err: unknown): Record<string, string> | undefined {
  const ext = (err as { extensions?: { http?: { headers?: Record<string, string> } } } | null)?.extensions;
  return ext?.http?.headers;
}

/**
 * The server's own Response class (Yoga's fetch ponyfill, set on each request): it writes string bodies straight to
 * the socket, where a platform Response would be read back through a web stream.
 */
let ResponseImpl: typeof Response = Response;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new ResponseImpl(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
}

function fail(items: ErrorBodyItem[], headers?: Record<string, string>): Response {
  const { status, body } = errorBody(items);
  return json(status, body, headers);
}

export function restAdapter(options: RestAdapterOptions): Plugin {
  const compiled = compileRoutes(options.schema, options.routes);

  const itemOf = (err: unknown): ErrorBodyItem => {
    const item = toErrorItem(err);
    if (item.code === 'server_error') options.onUnexpectedError(err);
    return item;
  };

  async function handle(request: Request, url: URL): Promise<Response> {
    const candidates = compiled.map((r) => ({ r, m: r.pattern.exec(url.pathname) })).filter((c) => c.m);
    if (candidates.length === 0) {
      return fail([{ code: 'endpoint_not_found', message: `No API endpoint at ${url.pathname}.`, params: {} }]);
    }
    const hit = candidates.find((c) => c.r.method === request.method);
    if (!hit) {
      const allow = [...new Set(candidates.map((c) => c.r.method))].join(', ');
      return fail([{ code: 'method_not_allowed', message: `${request.method} is not allowed here; use ${allow}.`, params: { allowed: allow.split(', ') } }], { allow });
    }
    const cleanups: (() => Promise<void>)[] = [];
    try {
      const contextValue = await options.contextFor(request);
      const upload = hit.r.upload && options.receiveUpload ? { field: hit.r.upload, receive: options.receiveUpload, cleanups } : null;
      const raw = await requestFields(request, url, { ...hit.m!.groups }, options.maxBodyBytes, upload);
      const variableValues = toVariables(options.schema, hit.r.operation, raw);
      const limit = deadline(options.limits.timeoutMs, request.signal);
      let result: ExecutionResult;
      try {
        result = await normalizedExecutor({ schema: options.schema, document: hit.r.document as DocumentNode, variableValues, contextValue, signal: limit.signal }) as ExecutionResult;
      } finally {
        limit.clear();
      }
      if (result.errors?.length) return fail(result.errors.map(itemOf), headersOf(result.errors[0]));
      return json(200, envelope(hit.r.envelope, lowerEnums(result.data?.[hit.r.rootField], hit.r.enums)));
    } catch (err) {
      // An upload cut short leaves the rest of the body unread: do not keep the connection.
      const close: Record<string, string> = hit.r.upload ? { connection: 'close' } : {};
      return fail([itemOf(err)], { ...headersOf(err), ...close });
    } finally {
      await Promise.all(cleanups.map((c) => c().catch(() => {})));
    }
  }

  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== '/api' && !url.pathname.startsWith('/api/')) return;
      ResponseImpl = fetchAPI.Response;
      endResponse(await handle(request, url));
    },
  };
}
