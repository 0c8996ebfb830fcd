// The repository's root (the folder of package.json), wherever the code runs from: the sources under src/ (tsx,
// vitest) or the build under dist/src/ (`npm start`).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function projectRoot(): string {
  if (root) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`No package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  root = dir;
  return root;
}
