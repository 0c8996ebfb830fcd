// Local-disk storage: one file per blob under a root directory (DATA_DIR/files); temporary files under
// <root>/.tmp, so that put() is a rename on the same filesystem (atomic).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { ByteRange, Storage } from './index.js';

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

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const p = this.pathOf(key);
    await fsp.access(p);
    return fs.createReadStream(p, range ? { start: range.start, end: range.end } : {});
  }

  async exists(key: string): Promise<boolean> {
    return fsp.access(this.pathOf(key)).then(() => true, () => false);
  }

  async remove(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.map((k) => fsp.rm(this.pathOf(k), { force: true })));
  }
}
