// Trusted documents (persisted operations): a front-end published by the operator sends the SHA-256 of a document
// instead of the document. The documents are a JSON file `{ "<sha256>": "<document>" }` (GRAPHQL_PERSISTED_DOCUMENTS)
// loaded and checked at start: every key must be the SHA-256 of its document, and every document must be valid
// against the schema. With GRAPHQL_TRUSTED_DOCUMENTS_ONLY=1, /graphql runs nothing else.
//
// A request names a document by Apollo's `extensions.persistedQuery.sha256Hash` (version 1) or by `documentId`
// (`<sha256>` or `sha256:<sha256>`). The REST adapter runs its own documents in-process and is not affected.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { parse, validate, type GraphQLSchema } from 'graphql';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';
import { ApiError } from '../errors.js';
import { ConfigError } from '../config.js';

export type TrustedDocuments = ReadonlyMap<string, string>;

const HASH = /^[0-9a-f]{64}$/;
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
  for (const [hash, document] of Object.entries(json)) {
    if (!HASH.test(hash)) throw bad(`the key "${hash}" is not a SHA-256 in lower-case hex (64 characters)`);
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
  extensions?: Record<string, unknown>;
  documentId?: unknown;
}

/** The hash a request names, from Apollo's extension or `documentId`; undefined when it names none. */
export function requestedHash(params: Params): string | undefined {
  const apollo = params.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  if (apollo && typeof apollo === 'object' && typeof apollo.sha256Hash === 'string') return apollo.sha256Hash;
  if (typeof params.documentId === 'string') return params.documentId.replace(/^sha256:/, '');
  return undefined;
}

const required = () =>
  new ApiError(
    'persisted_document_required',
    'This server runs trusted documents only: send the SHA-256 of a published document in extensions.persistedQuery.sha256Hash or documentId, not a query.',
  );

export function trustedDocumentsPlugin(documents: TrustedDocuments, trustedOnly: boolean): Plugin {
  return usePersistedOperations({
    allowArbitraryOperations: !trustedOnly,
    extractPersistedOperationId: (params) => requestedHash(params as Params) ?? null,
    getPersistedOperation: (hash) => documents.get(hash) ?? null,
    customErrors: {
      notFound: (payload) => {
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
