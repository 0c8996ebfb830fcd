// Trusted documents (persisted operations): a front-end published by the operator sends the SHA-256 of a document
// instead of the document. The documents are a JSON file `{ "<sha256>": "<document>" }` (GRAPHQL_PERSISTED_DOCUMENTS)
// loaded and checked at start: every key must be the SHA-256 of its document, and every document must be valid
// against the schema. With GRAPHQL_TRUSTED_DOCUMENTS_ONLY=1, /graphql runs nothing else.
//
// A request names a document by Apollo's `extensions.persistedQuery.sha256Hash` (version 1) or by `documentId`
// (`<sha256>` or `sha256:<sha256>`, as GraphQL Code Generator's client preset writes it; by POST or in the GET query
// string). The REST adapter runs its own documents in-process and is not affected.
//
// Unless trusted documents are the only ones accepted, Apollo's automatic persisted queries work too: a hash the
// server does not know answers `PersistedQueryNotFound` (code PERSISTED_QUERY_NOT_FOUND), the error Apollo's link
// retries on with the hash and the query; that request registers the document (its hash checked) once it has
// parsed and validated, and later requests may send the hash alone. The registered documents are kept per instance
// in a bounded LRU (APQ_MAX_DOCUMENTS); one evicted, or registered on another instance, is simply asked for again.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { parse, validate, type GraphQLSchema } from 'graphql';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { ConfigError } from '../config.js';

export type TrustedDocuments = ReadonlyMap<string, string>;

/** A file's key: the SHA-256, bare or written `sha256:<hex>` (Code Generator's client preset). */
const FILE_KEY = /^(?:sha256:)?([0-9a-f]{64})$/;
export const sha256 = (text: string) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');

/** Reads and checks the file; any problem is a ConfigError naming the file (and the entry). */
export function loadTrustedDocuments(file: string | undefined, schema: GraphQLSchema): TrustedDocuments {
  const documents = new Map<string, string>();
  if (!file) return documents;
  const bad = (why: string) => new ConfigError(`GRAPHQL_PERSISTED_DOCUMENTS ${file}: ${why}`);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw bad(
      (err as NodeJS.ErrnoException).code
        ? `cannot be read (${(err as Error).message})`
        : `is not valid JSON (${(err as Error).message})`,
    );
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw bad('must be a JSON object of { "<sha256>": "<document>" }');
  }
  for (const [key, document] of Object.entries(json)) {
    const hash = FILE_KEY.exec(key)?.[1];
    if (!hash)
      throw bad(`the key "${key}" is not a SHA-256 in lower-case hex (64 characters, optionally written sha256:<hex>)`);
    if (typeof document !== 'string' || document.trim() === '')
      throw bad(`the document of ${hash} is not a non-empty string`);
    if (sha256(document) !== hash)
      throw bad(`${hash} is not the SHA-256 of its document (that is ${sha256(document)})`);
    let problems: readonly { message: string }[];
    try {
      problems = validate(schema, parse(document));
    } catch (err) {
      throw bad(`the document of ${hash} does not parse: ${(err as Error).message}`);
    }
    if (problems.length > 0)
      throw bad(`the document of ${hash} does not match the schema: ${problems.map((p) => p.message).join('; ')}`);
    documents.set(hash, document);
  }
  return documents;
}

interface Params {
  query?: unknown;
  extensions?: Record<string, unknown>;
  documentId?: unknown;
}

/** Documents registered by Apollo's automatic persisted queries, least recently used first out. */
export class ApqStore {
  readonly #documents = new Map<string, string>();
  constructor(readonly max: number) {}
  get(hash: string): string | undefined {
    const document = this.#documents.get(hash);
    if (document !== undefined) {
      this.#documents.delete(hash);
      this.#documents.set(hash, document);
    }
    return document;
  }
  set(hash: string, document: string): void {
    if (this.max === 0) return;
    this.#documents.delete(hash);
    this.#documents.set(hash, document);
    while (this.#documents.size > this.max) this.#documents.delete(this.#documents.keys().next().value!);
  }
  get size(): number {
    return this.#documents.size;
  }
}

/** The hash a request names, from Apollo's extension or `documentId`; undefined when it names none. */
export function requestedHash(params: Params): string | undefined {
  const apollo = params.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  if (apollo && typeof apollo === 'object' && typeof apollo.sha256Hash === 'string') return apollo.sha256Hash;
  if (typeof params.documentId === 'string') return params.documentId.replace(/^sha256:/, '');
  return undefined;
}

/** Whether a request names its document by Apollo's extension (the automatic persisted queries protocol). */
const isApollo = (params: Params) =>
  typeof (params.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash === 'string';

/** The answer Apollo's persisted-query link (and urql's) recognise and retry with the full query. */
const apqNotFound = () => new ApiError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound');

const required = () =>
  new ApiError(
    'persisted_document_required',
    'This server runs trusted documents only: send the SHA-256 of a published document in extensions.persistedQuery.sha256Hash or documentId, not a query.',
  );

/**
 * Reads `documentId` from a GET request's query string (Yoga's own GET parsing keeps only query, operationName,
 * variables and extensions), and registers Apollo's automatic persisted queries once their document validated.
 */
function documentIdsAndApq(store: ApqStore | undefined): Plugin {
  const pending = new WeakMap<object, { hash: string; query: string }>();
  return {
    onParams({ request, params, setParams, context }) {
      const p = params as Params;
      if (request.method === 'GET' && p.documentId === undefined) {
        const documentId = new URL(request.url).searchParams.get('documentId');
        if (documentId !== null) setParams({ ...params, documentId } as typeof params);
      }
      if (!store || typeof p.query !== 'string' || !isApollo(p)) return;
      const hash = (p.extensions!.persistedQuery as { sha256Hash: string }).sha256Hash;
      if (sha256(p.query) !== hash) {
        throw new ApiError(
          'invalid_input',
          `provided sha does not match query: extensions.persistedQuery.sha256Hash must be the SHA-256 of the query text (${sha256(p.query)}), not ${hash}.`,
          { field: 'extensions.persistedQuery.sha256Hash' },
        );
      }
      pending.set(context, { hash, query: p.query });
    },
    onValidate({ context }) {
      const registration = pending.get(context);
      if (!registration) return;
      return ({ valid }) => {
        if (valid) store!.set(registration.hash, registration.query);
      };
    },
  };
}

export function trustedDocumentsPlugins(
  documents: TrustedDocuments,
  trustedOnly: boolean,
  apqMaxDocuments: number,
): Plugin[] {
  const store = trustedOnly || apqMaxDocuments === 0 ? undefined : new ApqStore(apqMaxDocuments);
  return [documentIdsAndApq(store), persistedOperations(documents, trustedOnly, store)];
}

function persistedOperations(documents: TrustedDocuments, trustedOnly: boolean, store: ApqStore | undefined): Plugin {
  return usePersistedOperations({
    allowArbitraryOperations: !trustedOnly,
    extractPersistedOperationId: (params) => requestedHash(params as Params) ?? null,
    getPersistedOperation: (hash) => documents.get(hash) ?? store?.get(hash) ?? null,
    customErrors: {
      notFound: (payload) => {
        if (store && isApollo(payload.params as Params)) return apqNotFound();
        const hash = requestedHash(payload.params as Params) ?? '';
        return new ApiError(
          'persisted_document_not_found',
          `No trusted document has the hash ${hash}: send one of the server's published documents, or the query itself${trustedOnly ? ' (not accepted here: trusted documents only)' : ''}.`,
          { hash },
        );
      },
      keyNotFound: () =>
        trustedOnly
          ? required()
          : new ApiError(
              'invalid_input',
              'Send a query, or the SHA-256 of a trusted document in extensions.persistedQuery.sha256Hash or documentId.',
              { field: 'query' },
            ),
      persistedQueryOnly: required,
    },
  }) as Plugin;
}
