// Queries /graphql has run before, answered directly. Yoga's pipeline (its request parsing, the envelop hooks of
// every plugin, result processing) costs a one-row read about a third of the service's CPU, and the REST face, which
// answers in one hook, never pays it. A client sends the same few documents again and again, so a POST whose query
// text an earlier request already ran through the whole pipeline (parsed, validated, within the limits) is answered
// here, with the same checks and the same execution (src/graphql/limits.ts: runWithinLimits) as there.
//
// Only a plain success is answered here: JSON in, one query, variables every check accepts, an answer with data and
// nothing else. Anything else goes through Yoga's pipeline as if this path were not there, body and all:
//   · before the key is read (an unknown document, other parameters, variables a check refuses), untouched;
//   · after (a refused key, an answer with errors, a deadline), with what was done here handed over, so that nothing
//     is done twice: the context (the key is read and its rate limit counted once) and the operation's outcome
//     (the pipeline answers it, masking and coding its errors as it does any others).
import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { GraphqlLimits } from '../config.js';
import type { OperationSignal } from '../db/operation-signal.js';
import type { CompiledOperations } from '../graphql/compiled.js';
import { checkOperationCost, runWithinLimits } from '../graphql/limits.js';
import { impossibleNumber } from '../graphql/whole-numbers.js';
import { badTextIn } from '../input/text.js';
import { ownUtf8 } from '../bytes.js';
import type { GraphqlAnswers } from './read-cache.js';

/** Query texts remembered, least recently run first out (as many as compiled documents are kept). */
export const KNOWN_QUERIES = 500;
/** Longer query texts are not remembered (500 of them stay within 16 MiB). */
export const KNOWN_QUERY_CHARS = 32 * 1024;

interface Params {
  query?: string;
  /** A trusted document's SHA-256 (`<hex>` or `sha256:<hex>`), sent instead of its text. */
  documentId?: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/** What this path did for a request it handed back to the pipeline. */
interface HandedBack {
  text: string;
  /** Why the body could not be read, when it could not. */
  unread?: unknown;
  context?: { value: unknown } | { error: unknown };
  outcome?: { result: ExecutionResult } | { error: unknown };
}

export interface KnownQueriesOptions {
  schema: GraphQLSchema;
  compiled: CompiledOperations;
  answers: GraphqlAnswers;
  limits: GraphqlLimits;
  maxBodyBytes: number;
  /** The trusted documents by SHA-256 (GRAPHQL_PERSISTED_DOCUMENTS): a request may name one by `documentId`. */
  trustedDocuments: ReadonlyMap<string, string>;
  /** GRAPHQL_TRUSTED_DOCUMENTS_ONLY: a query's text is refused, only `documentId` is answered here. */
  trustedOnly: boolean;
  /** A request's context: its visitor, once the key is read and the rate limit counted (throws their refusals). */
  contextFor(request: Request): Promise<unknown>;
  /** Waits for the operation's fair share (and response allowance); resolves with what ends them. */
  admit(context: unknown, signal: OperationSignal): Promise<() => void>;
  /** Names the request's operation for /metrics. */
  noteOperation(request: Request, document: DocumentNode, operationName: string | null | undefined): void;
}

/** The media type of the answer Yoga would give for this Accept header, when it is one this path gives. */
function answerType(accept: string | null): string | null {
  if (accept === null) return 'application/json';
  const type = accept.split(';')[0]!.trim().toLowerCase();
  if (accept.includes(',')) return null;
  if (type === '*/*' || type === 'application/json') return 'application/json';
  if (type === 'application/graphql-response+json') return type;
  return null;
}

const PARAM_NAMES = new Set(['query', 'variables', 'operationName']);
const BODY_NAMES = new Set([...PARAM_NAMES, 'documentId']);
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The body's parameters when they are a plain query's: its text or a trusted document's id (not both), variables, the
 * operation's name, nothing else.
 */
function plainParams(text: string): Params | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isPlainObject(body) || typeof (body.query ?? body.documentId) !== 'string') return null;
  if (body.query !== undefined && body.documentId !== undefined) return null;
  for (const key in body) if (!BODY_NAMES.has(key)) return null;
  if (body.variables != null && !isPlainObject(body.variables)) return null;
  if (body.operationName != null && typeof body.operationName !== 'string') return null;
  return body as unknown as Params;
}

const keyOf = (query: string, operationName: string | null | undefined) => `${operationName ?? ''}\0${query}`;

export class KnownQueries {
  private readonly documents = new Map<string, DocumentNode>();
  private readonly handedBack = new WeakMap<Request, HandedBack>();
  /** Requests answered here, and handed back to the pipeline after their parameters were read. */
  readonly counts = { direct: 0, handedBack: 0 };

  constructor(private readonly opts: KnownQueriesOptions) {}

  /** A request's context: the one made here when the request was handed back, else a new one. */
  contextFor(request: Request): Promise<unknown> {
    const given = this.handedBack.get(request)?.context;
    if (!given) return this.opts.contextFor(request);
    return 'error' in given ? Promise.reject(given.error) : Promise.resolve(given.value);
  }

  /** Remembers a query text the pipeline is about to execute (it was parsed, validated and within the limits). */
  private remember(params: unknown, document: DocumentNode, operationName: string | null | undefined): void {
    if (!isPlainObject(params) || typeof params.query !== 'string' || params.query.length > KNOWN_QUERY_CHARS) return;
    // By its text, whether the request sent it or named a trusted document (whose text the pipeline put in the
    // parameters). Apollo's persisted queries (extensions) are the pipeline's: their documents may be an instance's own.
    for (const key in params) if (params[key] !== undefined && !PARAM_NAMES.has(key)) return;
    if (getOperationAST(document, operationName)?.operation !== 'query') return;
    const key = keyOf(params.query, operationName);
    if (this.documents.get(key) === document) return;
    this.documents.delete(key);
    if (this.documents.size >= KNOWN_QUERIES) this.documents.delete(this.documents.keys().next().value!);
    this.documents.set(key, document);
  }

  /**
   * The text a request runs: its own, or the trusted document its id names (the pipeline reads the same map); null
   * when this path leaves it to the pipeline (text where only trusted documents run, an id not in the file).
   */
  private queryOf(params: Params): string | null {
    if (params.documentId !== undefined)
      return this.opts.trustedDocuments.get(params.documentId.replace(/^sha256:/, '')) ?? null;
    return this.opts.trustedOnly ? null : params.query!;
  }

  /** The answer to a request, or null when it goes through the pipeline (with what was done for it here). */
  private async answer(request: Request, type: string, R: typeof Response, back: HandedBack): Promise<Response | null> {
    try {
      back.text = await request.text();
    } catch (error) {
      // The body could not be read (the client went away): the pipeline's parser meets the same failure.
      back.unread = error;
      return null;
    }
    const text = back.text;
    const params = plainParams(text);
    const query = params && this.queryOf(params);
    const document = query && this.documents.get(keyOf(query, params.operationName));
    if (!params || !document) return null;
    const { schema, limits } = this.opts;
    const variables = params.variables ?? undefined;
    const args = {
      schema,
      document,
      operationName: params.operationName ?? undefined,
      variableValues: variables,
      contextValue: undefined as unknown,
    };
    // The checks the pipeline makes before execution; a refusal is left to it, to be answered as it answers it.
    try {
      checkOperationCost(limits, args);
    } catch {
      return null;
    }
    if (impossibleNumber(schema, document, variables) || badTextIn(variables, document)) return null;
    const run = this.opts.compiled.runnable(args, false);
    if (!run) return null;
    this.counts.handedBack++; // until answered below
    try {
      args.contextValue = await this.opts.contextFor(request);
      back.context = { value: args.contextValue };
    } catch (error) {
      back.context = { error };
      return null;
    }
    const context = args.contextValue;
    this.opts.noteOperation(request, document, params.operationName);
    let keep: { store(value: Buffer, bytes: number): void; drop(): void } | undefined;
    let result: ExecutionResult;
    try {
      const lookup = this.opts.answers.lookup(args);
      const found = lookup ? await lookup : undefined;
      if (found && 'value' in found) return this.done(R, type, found.value);
      keep = found && !found.passed ? found : undefined;
      result = await runWithinLimits(limits, context, request.signal, async (signal) => {
        const release = await this.opts.admit(context, signal);
        try {
          this.opts.compiled.runs.compiled++;
          return await run(signal);
        } finally {
          release();
        }
      });
    } catch (error) {
      // A deadline, the database out of reach (the cache's lookup reads it too): the pipeline answers it.
      keep?.drop();
      back.outcome = { error };
      return null;
    }
    // A plain success only: errors and extensions are the pipeline's to answer (masked, coded, given their status).
    for (const key in result) {
      if (key !== 'data' || result.data == null) {
        keep?.drop();
        back.outcome = { result };
        return null;
      }
    }
    const bytes = ownUtf8(JSON.stringify({ data: result.data }));
    keep?.store(bytes, bytes.length);
    return this.done(R, type, bytes);
  }

  private done(R: typeof Response, type: string, bytes: Buffer): Response {
    this.counts.handedBack--;
    this.counts.direct++;
    return new R(bytes as unknown as BodyInit, { status: 200, headers: { 'content-type': `${type}; charset=utf-8` } });
  }

  /**
   * The plugin that answers requests. Register it after the plugins that see every request first (logs, CORS,
   * metrics): a request answered here ends Yoga's request hooks.
   */
  requestPlugin(): Plugin {
    const { maxBodyBytes } = this.opts;
    return {
      onRequest: ({ request, url, endResponse, fetchAPI }) => {
        if (url.pathname !== '/graphql' || request.method !== 'POST' || this.documents.size === 0) return;
        const type = answerType(request.headers.get('accept'));
        const contentType = request.headers.get('content-type');
        const length = request.headers.get('content-length');
        if (!type || !contentType || !/^application\/json\s*(;|$)/i.test(contentType)) return;
        if (length === null || !(Number(length) <= maxBodyBytes)) return;
        // What is done here for a request handed back is kept with it; one answered here leaves nothing behind.
        const back: HandedBack = { text: '' };
        return this.answer(request, type, fetchAPI.Response, back).then(
          (response) => {
            if (response) endResponse(response);
            else this.handedBack.set(request, back);
          },
          // Nothing here should throw; if anything does, the pipeline answers the request as it would have.
          () => void this.handedBack.set(request, back),
        );
      },
      // A request handed back is parsed from the body this path read, by the parser Yoga chose for it.
      onRequestParse: ({ request, requestParser, setRequestParser, fetchAPI }) => {
        const back = this.handedBack.get(request);
        if (!back || !requestParser) return;
        const parse = requestParser;
        if (back.unread) setRequestParser(() => Promise.reject(back.unread));
        else
          setRequestParser(() =>
            parse(new fetchAPI.Request(request.url, { method: 'POST', headers: request.headers, body: back.text })),
          );
      },
    };
  }

  /**
   * The plugin that remembers the queries the pipeline executes, and gives a request handed back with its outcome that
   * outcome in place of its execution. Register it after fairSharePlugin (the outcome takes no second slot) and before
   * operationLimitsPlugin (it is answered inside the deadline's wrapper, as any execution).
   */
  executionPlugin(): Plugin {
    return {
      onExecute: ({ args, setExecuteFn }) => {
        const { request, params } = args.contextValue as { request?: Request; params?: unknown };
        const outcome = request && this.handedBack.get(request)?.outcome;
        if (outcome) {
          setExecuteFn(() => ('error' in outcome ? Promise.reject(outcome.error) : Promise.resolve(outcome.result)));
          return;
        }
        this.remember(params, args.document, args.operationName);
      },
    };
  }
}
