// S3-compatible object storage (AWS S3, MinIO, Ceph, R2, …). Blobs are sent with a streaming multipart upload
// from the local temporary file; an object becomes visible only when its upload completes, so put() is atomic.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ByteRange, Storage, StoredBlob } from './index.js';

export interface S3Settings {
  bucket: string;
  region: string;
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /** Local directory for the temporary files uploads are streamed to first. */
  tmpDir: string;
}

export class S3Storage implements Storage {
  readonly tmpDir: string;
  private readonly client: S3Client;

  constructor(private readonly s: S3Settings) {
    this.tmpDir = s.tmpDir;
    fs.mkdirSync(this.tmpDir, { recursive: true });
    this.client = new S3Client({
      region: s.region,
      endpoint: s.endpoint,
      forcePathStyle: s.forcePathStyle,
      credentials:
        s.accessKeyId && s.secretAccessKey
          ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey }
          : undefined,
    });
  }

  async put(key: string, tmpPath: string): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.s.bucket, Key: key, Body: fs.createReadStream(tmpPath) },
      queueSize: 4,
      partSize: 8 * 1024 * 1024,
    });
    await upload.done();
    await fsp.rm(tmpPath, { force: true });
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const out = await this.client.send(
      new GetObjectCommand({
        Bucket: this.s.bucket,
        Key: key,
        Range: range ? `bytes=${range.start}-${range.end}` : undefined,
      }),
    );
    return out.Body as Readable;
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.s.bucket, Key: key }));
      return true;
    } catch (err) {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
      throw err;
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.s.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
    }
  }

  async *list(): AsyncIterable<StoredBlob> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.s.bucket, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, modified: o.LastModified ?? new Date(0) };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  destroy(): void {
    this.client.destroy();
  }
}

export function s3TmpDir(dataDir: string): string {
  return path.join(dataDir, 'tmp');
}
