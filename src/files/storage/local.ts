// Local-disk storage: one file per blob under a root directory (DATA_DIR/files).
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Storage } from './index.js';

export class LocalStorage implements Storage {
  constructor(readonly root: string) {}

  /** The path of a key, refusing keys that would escape the root. */
  pathOf(key: string): string {
    const p = path.resolve(this.root, key);
    if (!p.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`Storage key escapes the storage root: ${key}`);
    return p;
  }

  async remove(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.map((k) => fs.rm(this.pathOf(k), { force: true })));
  }
}
