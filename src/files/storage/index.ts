// Blob storage behind one small interface. Uploads are streamed to a local temporary file first (while the
// processors hash and sniff them), then handed to the driver with put(), which makes them visible atomically:
// a crash leaves at worst an orphan blob, never a row pointing at a partial one.
import type { Readable } from 'node:stream';

export interface ByteRange {
  start: number;
  end: number;
}

/** A stored blob as a listing sees it. */
export interface StoredBlob {
  key: string;
  modified: Date;
}

export interface Storage {
  /** A local directory for temporary files, on the same filesystem as the blobs when the driver is local. */
  readonly tmpDir: string;
  /** Moves the complete temporary file at `tmpPath` to `key` (the temporary file is gone afterwards). */
  put(key: string, tmpPath: string): Promise<void>;
  /**
   * The blob's bytes, or an inclusive byte range of them. `size`, the blob's recorded size when the caller knows it,
   * lets a driver size its reads to the blob (the local driver reads a small file into a buffer of its size).
   */
  read(key: string, range?: ByteRange, size?: number): Promise<Readable>;
  exists(key: string): Promise<boolean>;
  /** Removes blobs by key; keys that no longer exist are ignored. */
  remove(keys: readonly string[]): Promise<void>;
  /** Every blob (temporary files excluded), in no particular order, for the orphan reclaimer. */
  list(): AsyncIterable<StoredBlob>;
}
