// Streams incoming bytes to a temporary file while counting, hashing (SHA-256, SHA-1 and SHA-512 in one pass) and keeping the first bytes for
// MIME sniffing. Over the server limit it stops reading, removes the temporary file and answers
// 422 upload_exceeds_php_limit. Nothing is ever buffered whole.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError } from '../errors.js';
import { temporaryFileName } from './storage/tmp-sweep.js';

export const HEAD_BYTES = 4100;

export interface Ingested {
  tmpPath: string;
  size: number;
  /** `sha256:<hex>` */
  hash: string;
  /** `sha1:<hex>` and `sha512:<hex>`, from the same pass. */
  sha1: string;
  sha512: string;
  head: Buffer;
}

export const tooLarge = (limit: number) =>
  new ApiError(
    'mc_dm_api_error.upload_exceeds_php_limit',
    `The upload is larger than the server's limit of ${limit} bytes.`,
    { limit },
  );

/** Where ingested bytes came from: a client's upload, or an external URL the service fetched. */
export type IngestSource = 'upload' | 'external_url';

/** Bytes received by ingest() in this process, by source, as they stream (over-limit uploads included): /metrics. */
export const ingestedBytes: Record<IngestSource, number> = { upload: 0, external_url: 0 };

export async function ingest(
  source: Readable,
  tmpDir: string,
  maxBytes: number,
  from: IngestSource = 'upload',
): Promise<Ingested> {
  const tmpPath = path.join(tmpDir, temporaryFileName());
  const hash = crypto.createHash('sha256');
  const sha1 = crypto.createHash('sha1');
  const sha512 = crypto.createHash('sha512');
  let size = 0;
  const headChunks: Buffer[] = [];
  let headLength = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      ingestedBytes[from] += chunk.length;
      if (size > maxBytes) return done(tooLarge(maxBytes));
      hash.update(chunk);
      sha1.update(chunk);
      sha512.update(chunk);
      if (headLength < HEAD_BYTES) {
        headChunks.push(chunk.subarray(0, HEAD_BYTES - headLength));
        headLength += Math.min(chunk.length, HEAD_BYTES - headLength);
      }
      done(null, chunk);
    },
  });
  const out = fs.createWriteStream(tmpPath, { flags: 'wx' });
  try {
    await pipeline(source, meter, out);
  } catch (err) {
    // The file may still be opening when the source fails: wait until it is closed, then remove it.
    // (events.once would reject on the stream's own 'error', which here is the error being handled.)
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
    await fs.promises.rm(tmpPath, { force: true });
    source.destroy();
    throw err;
  }
  return {
    tmpPath,
    size,
    hash: `sha256:${hash.digest('hex')}`,
    sha1: `sha1:${sha1.digest('hex')}`,
    sha512: `sha512:${sha512.digest('hex')}`,
    head: Buffer.concat(headChunks),
  };
}
