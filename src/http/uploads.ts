// Uploads on both faces, streamed (never buffered whole) and limited by MAX_UPLOAD_BYTES:
// - /graphql: the GraphQL multipart request spec, parsed by graphql-upload-minimal from the Node request;
// - REST upload routes: the adapter hands the file part to receiveUpload(), which streams it to a temporary
//   file (hashing and sniffing as it goes) and returns an Upload the mutation reads without a second copy.
import fs from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GraphQLParams, Plugin } from 'graphql-yoga';
import { processRequest, Upload, type FileUpload } from 'graphql-upload-minimal';
import { ingest } from '../files/ingest.js';
import type { Storage } from '../files/storage/index.js';
import { ApiError } from '../errors.js';
import { requireScopes } from '../auth/scopes.js';
import { drainRefusedBody } from '../input/drain.js';
import type { Context } from '../graphql/context.js';
import type { UploadSlots } from './upload-slots.js';

export interface GraphqlUploadOptions {
  /** Limit of the `operations` and `map` fields (MAX_BODY_BYTES); other non-file fields are not read at all. */
  maxFieldBytes: number;
  /** Resolves the key from the headers (throws 401), so that a refused request's body is never read. */
  contextFor(request: Request): Promise<Context>;
  slots: UploadSlots;
  /** Streams a file part to a temporary file (uploadReceiver: MAX_UPLOAD_BYTES, hash, sniffing). */
  receive: UploadReceiver;
  /** How much of a refused body is read and dropped after the answer (REFUSED_BODY_DRAIN_BYTES). */
  drainBytes: number;
}

export type UploadReceiver = (
  file: Readable,
  info: { filename: string; mimeType: string },
) => Promise<{ value: unknown; cleanup(): Promise<void> }>;

const malformed = (err: unknown) =>
  new ApiError(
    'invalid_input',
    `The multipart body is malformed: ${(err as Error)?.message ?? String(err)}. Send operations, map, then the files the map names, each part with its headers (RFC 7578), and end with the closing boundary.`,
    { field: 'body' },
  );

/**
 * How the multipart parser ends: `failed()` is its first error as soon as there is one, `ended` settles when it has
 * closed (undefined when it read the whole body). processRequest() pipes the request into the parser, which is how
 * the parser is found. graphql-upload-minimal listens for the parser's first error only (`once`), but busboy can
 * emit a second — a parser destroyed after a malformed part reports "Unexpected end of form" — and an 'error' event
 * nobody listens to ends the process: every error is listened to here.
 */
function watchParser(req: IncomingMessage): { failed(): Error | undefined; ended: Promise<Error | undefined> } {
  const pipe = req.pipe.bind(req);
  let first: Error | undefined;
  const ended = new Promise<Error | undefined>((resolve) => {
    req.pipe = (<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }) => {
      req.pipe = pipe;
      destination.on('error', (err: Error) => {
        first ??= err;
      });
      destination.on('close', () => resolve(first));
      return pipe(destination, options);
    }) as typeof req.pipe;
  });
  return { failed: () => first, ended };
}

/** The client went away before its body ended (graphql-upload-minimal's 499). */
const cutOff = (err: unknown) => (err as { status?: number }).status === 499;

/** The Upload values of `operations` (the map puts them where the variables name them). */
function uploadsIn(operations: unknown, found: Upload[] = [], depth = 0): Upload[] {
  if (depth > 32 || operations === null || typeof operations !== 'object') return found;
  for (const value of Object.values(operations as Record<string, unknown>)) {
    if (value instanceof Upload) found.push(value);
    else uploadsIn(value, found, depth + 1);
  }
  return found;
}

/**
 * /graphql multipart requests (GraphQL multipart request spec). Before the body is read: the content type must
 * name its boundary, the key must hold `mc_dm_download:write` (the only operation taking a file needs it), and an
 * upload slot must be free. Then the whole body is received before the operation runs: the file is streamed to a
 * temporary file (MAX_UPLOAD_BYTES counted as it streams), and a body that is malformed anywhere — a bad part
 * header, a cut part, no closing boundary — answers 400 invalid_input (field "body") without executing anything.
 * So the operation's deadline measures its execution, not the upload's transfer. The temporary file is removed
 * when the response is sent, whatever the outcome.
 */
export function graphqlUploadPlugin(opts: GraphqlUploadOptions): Plugin {
  const releases = new WeakMap<Request, () => void>();
  const cleanups = new WeakMap<Request, (() => Promise<void>)[]>();
  return {
    async onRequestParse({ request, serverContext, setRequestParser }) {
      const type = request.headers.get('content-type') ?? '';
      const node = serverContext as unknown as { req?: IncomingMessage; res?: ServerResponse };
      if (!type.toLowerCase().startsWith('multipart/form-data') || !node.req || !node.res) return;
      if (!/;\s*boundary=/i.test(type)) {
        throw new ApiError(
          'invalid_input',
          'A multipart/form-data body needs a boundary parameter in its Content-Type.',
          { field: 'content-type' },
        );
      }
      const ctx = await opts.contextFor(request);
      requireScopes(ctx.visitor, ['mc_dm_download:write']);
      releases.set(request, opts.slots.acquire());
      const done: (() => Promise<void>)[] = [];
      cleanups.set(request, done);
      setRequestParser(async () => {
        const req = node.req!;
        const parser = watchParser(req);
        let operations: unknown;
        try {
          operations = await processRequest(req, node.res!, { maxFieldSize: opts.maxFieldBytes, maxFiles: 1 });
        } catch (err) {
          if ((err as { status?: number }).status === 413)
            throw new ApiError('request_too_large', (err as Error).message, { limit: opts.maxFieldBytes });
          throw malformed(err);
        }
        for (const upload of uploadsIn(operations)) {
          const u = upload as Upload & { promise: Promise<FileUpload>; resolve(f: unknown): void };
          let file: FileUpload;
          try {
            file = await u.promise;
          } catch (err) {
            // The body ended cleanly without the file: the map named a part that was never sent.
            if (!parser.failed() && !cutOff(err)) {
              throw new ApiError(
                'invalid_input',
                `A file named in the multipart map was not received: ${(err as Error).message}`,
                { field: 'map' },
              );
            }
            throw malformed(err);
          }
          let received: Awaited<ReturnType<UploadReceiver>>;
          try {
            // createReadStream() throws the part's error at once when the part has already failed.
            received = await opts.receive(file.createReadStream(), {
              filename: file.filename,
              mimeType: file.mimetype,
            });
          } catch (err) {
            if (err instanceof ApiError) throw err;
            // The temporary file could not be written (a system call failed): the disk, not the body, logged as such.
            if ((err as NodeJS.ErrnoException).syscall) throw err;
            // Else the part's stream failed: the parser found the body malformed or cut (busboy may fail the part
            // before it reports the error itself).
            throw malformed(parser.failed() ?? err);
          }
          done.push(received.cleanup);
          // The operation reads the received file: a fresh Upload, resolved, in the place of the streamed one.
          (u as unknown as { promise: Promise<unknown> }).promise = Promise.resolve(
            (received.value as { promise: Promise<unknown> }).promise,
          );
        }
        // The rest of the body must parse too (a malformed part after the files, no closing boundary).
        const failed = await parser.ended;
        if (failed) throw malformed(failed);
        return operations as GraphQLParams | GraphQLParams[];
      });
    },
    async onResponse({ request, serverContext }) {
      releases.get(request)?.();
      releases.delete(request);
      const done = cleanups.get(request);
      cleanups.delete(request);
      if (done) await Promise.all(done.map((c) => c().catch(() => {})));
      // A body left unread (refused before it was read, or malformed): dropped after the answer, up to a limit.
      const req = (serverContext as unknown as { req?: IncomingMessage }).req;
      if (
        req &&
        !req.readableEnded &&
        (request.headers.get('content-type') ?? '').toLowerCase().startsWith('multipart/')
      ) {
        setImmediate(() => drainRefusedBody(req, opts.drainBytes));
      }
    },
  };
}

export function uploadReceiver(storage: Storage, maxUploadBytes: number): UploadReceiver {
  return async (file, info) => {
    const ingested = await ingest(file, storage.tmpDir, maxUploadBytes);
    const upload = new Upload() as Upload & { resolve(f: unknown): void };
    upload.resolve({
      filename: info.filename,
      fieldName: 'file',
      mimetype: info.mimeType,
      encoding: '7bit',
      ingested,
      createReadStream: () => createReadStream(ingested.tmpPath),
    });
    return { value: upload, cleanup: () => fs.rm(ingested.tmpPath, { force: true }) };
  };
}
