// Uploads on both faces, streamed (never buffered whole) and limited by MAX_UPLOAD_BYTES:
// - /graphql: the GraphQL multipart request spec, parsed by graphql-upload-minimal from the Node request;
// - REST upload routes: the adapter hands the file part to receiveUpload(), which streams it to a temporary
//   file (hashing and sniffing as it goes) and returns an Upload the mutation reads without a second copy.
import fs from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'graphql-yoga';
import { processRequest, Upload } from 'graphql-upload-minimal';
import { ingest } from '../files/ingest.js';
import type { Storage } from '../files/storage/index.js';
import { ApiError } from '../errors.js';
import { requireScopes } from '../auth/scopes.js';
import type { Context } from '../schema/context.js';
import type { UploadSlots } from './upload-slots.js';

export interface GraphqlUploadOptions {
  maxUploadBytes: number;
  /** Limit of the `operations` and `map` fields (MAX_BODY_BYTES); other non-file fields are not read at all. */
  maxFieldBytes: number;
  /** Resolves the key from the headers (throws 401), so that a refused request's body is never read. */
  contextFor(request: Request): Promise<Context>;
  slots: UploadSlots;
}

/** Uploads named in `map` that never arrive reject with this instead of the parser's own (untyped) error. */
function retypeMissingFiles(operations: unknown, depth = 0): void {
  if (depth > 32 || operations === null || typeof operations !== 'object') return;
  for (const value of Object.values(operations as Record<string, unknown>)) {
    if (value instanceof Upload) {
      const u = value as Upload & { promise: Promise<unknown> };
      u.promise = u.promise.catch((err: { status?: number; message?: string }) => {
        if (err instanceof ApiError) throw err;
        throw new ApiError('invalid_input', `A file named in the multipart map was not received: ${err?.message ?? 'missing'}`, { field: 'map' });
      });
      u.promise.catch(() => {}); // read by the resolver, if the operation asks for it at all
    } else {
      retypeMissingFiles(value, depth + 1);
    }
  }
}

/**
 * /graphql multipart requests (GraphQL multipart request spec). Before the body is read: the content type must
 * name its boundary, the key must hold `mc_dm_download:write` (the only operation taking a file needs it), and an
 * upload slot must be free. The file is streamed by the resolver; MAX_UPLOAD_BYTES is enforced by ingest().
 */
export function graphqlUploadPlugin(opts: GraphqlUploadOptions): Plugin {
  const releases = new WeakMap<Request, () => void>();
  return {
    async onRequestParse({ request, serverContext, setRequestParser }) {
      const type = request.headers.get('content-type') ?? '';
      const node = serverContext as unknown as { req?: IncomingMessage; res?: ServerResponse };
      if (!type.toLowerCase().startsWith('multipart/form-data') || !node.req || !node.res) return;
      if (!/;\s*boundary=/i.test(type)) {
        throw new ApiError('invalid_input', 'A multipart/form-data body needs a boundary parameter in its Content-Type.', { field: 'content-type' });
      }
      const ctx = await opts.contextFor(request);
      requireScopes(ctx.visitor, ['mc_dm_download:write']);
      releases.set(request, opts.slots.acquire());
      setRequestParser(async () => {
        let operations: unknown;
        try {
          // No file size limit here: ingest() counts the bytes and stops at MAX_UPLOAD_BYTES with its own error.
          operations = await processRequest(node.req!, node.res!, { maxFieldSize: opts.maxFieldBytes, maxFiles: 1 });
        } catch (err) {
          const status = (err as { status?: number }).status;
          if (status === 413) throw new ApiError('request_too_large', (err as Error).message, { limit: opts.maxFieldBytes });
          throw new ApiError('invalid_input', `The multipart request is malformed: ${(err as Error).message}`, { field: 'body' });
        }
        retypeMissingFiles(operations);
        return operations as any;
      });
    },
    onResponse({ request, response, serverContext }) {
      releases.get(request)?.();
      releases.delete(request);
      // A body left unread (refused or cut short) must not hold the connection.
      const req = (serverContext as unknown as { req?: IncomingMessage }).req;
      if (req && !req.readableEnded && (request.headers.get('content-type') ?? '').toLowerCase().startsWith('multipart/')) {
        response.headers.set('connection', 'close');
      }
    },
  };
}

export function uploadReceiver(storage: Storage, maxUploadBytes: number) {
  return async (file: Readable, info: { filename: string; mimeType: string }) => {
    const ingested = await ingest(file, storage.tmpDir, maxUploadBytes);
    const upload = new Upload() as Upload & { resolve(f: unknown): void };
    upload.resolve({
      filename: info.filename, fieldName: 'file', mimetype: info.mimeType, encoding: '7bit', ingested,
      createReadStream: () => createReadStream(ingested.tmpPath),
    });
    return { value: upload, cleanup: () => fs.rm(ingested.tmpPath, { force: true }) };
  };
}
