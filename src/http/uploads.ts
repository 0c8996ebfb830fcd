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

export function graphqlUploadPlugin(maxUploadBytes: number): Plugin {
  return {
    onRequestParse({ request, serverContext, setRequestParser }) {
      const type = request.headers.get('content-type') ?? '';
      const node = serverContext as unknown as { req?: IncomingMessage; res?: ServerResponse };
      if (!type.toLowerCase().startsWith('multipart/form-data') || !node.req || !node.res) return;
      // One byte over the limit is let through so that ingest() sees the overflow: the parser would
      // otherwise truncate silently at exactly the limit.
      setRequestParser(async () => {
        try {
          return await processRequest(node.req!, node.res!, { maxFileSize: maxUploadBytes + 1, maxFiles: 1 }) as any;
        } catch (err) {
          throw new ApiError('invalid_input', `The multipart request is malformed: ${(err as Error).message}`, { field: 'body' });
        }
      });
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
