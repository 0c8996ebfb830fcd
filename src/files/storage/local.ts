// Local-disk storage: one file per blob under a root directory (DATA_DIR/files); temporary files under
// <root>/.tmp, so that put() is a rename on the same filesystem (atomic).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { ByteRange, Storage, StoredBlob } from './index.js';

/** The largest read of a blob: the stream's default. */
const READ_CHUNK_BYTES = 64 * 1024;

export class LocalStorage implements Storage {
  readonly tmpDir: string;

  constructor(readonly root: string) {
    this.tmpDir = path.join(root, '.tmp');
    fs.mkdirSync(this.tmpDir, { recursive: true });
  }

  /** The path of a key, refusing keys that would escape the root. */
  pathOf(key: string): string {
    const p = path.resolve(this.root, key);
    if (!p.startsWith(path.resolve(this.root) + path.sep) || key.startsWith('.tmp')) {
      throw new Error(`Storage key escapes the storage root: ${key}`);
    }
    return p;
  }

  async put(key: string, tmpPath: string): Promise<void> {
    const target = this.pathOf(key);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.rename(tmpPath, target);
  }

  async read(key: string, range?: ByteRange, size?: number): Promise<Readable> {
    const p = this.pathOf(key);
    await fsp.access(p);
    // Each read of a stream takes a buffer of its highWaterMark, 64 KiB by default, outside the JavaScript heap:
    // for a small file, two of them per download (the bytes, then the end), and memory outside the heap that grows
    // that fast brings on full garbage collections. A read sized to the file takes what it needs.
    const bytes = range ? range.end - range.start + 1 : size;
    const highWaterMark = bytes !== undefined && bytes > 0 ? Math.min(bytes, READ_CHUNK_BYTES) : READ_CHUNK_BYTES;
    return fs.createReadStream(p, range ? { start: range.start, end: range.end, highWaterMark } : { highWaterMark });
  }

  async exists(key: string): Promise<boolean> {
    return fsp.access(this.pathOf(key)).then(
      () => true,
      () => false,
    );
  }

  async remove(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.map((k) => fsp.rm(this.pathOf(k), { force: true })));
  }

  async *list(): AsyncIterable<StoredBlob> {
    const walk = async function* (dir: string, prefix: string): AsyncIterable<StoredBlob> {
      let entries: fs.Dirent[];
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        return; // removed while listing
      }
      for (const e of entries) {
        if (prefix === '' && e.name.startsWith('.')) continue; // .tmp and the storage's own marker files
        const key = prefix ? `${prefix}/${e.name}` : e.name;
        if (e.isDirectory()) yield* walk(path.join(dir, e.name), key);
        else if (e.isFile()) {
          const stat = await fsp.stat(path.join(dir, e.name)).catch(() => null);
          if (stat) yield { key, modified: stat.mtime };
        }
      }
    };
    yield* walk(this.root, '');
  }
}
