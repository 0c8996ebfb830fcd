// `engines` in package.json promises Node 20.19 and later; every package the lock file installs must say it runs
// there too, or `npm ci` warns (EBADENGINE). The overrides in package.json exist for this (docs/architecture.md).
// Optional packages are left out: npm skips one whose engines do not match, without a warning.
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => JSON.parse(fs.readFileSync(path.join(root, file), 'utf8'));

describe('dependencies and engines', () => {
  it('every package npm ci installs supports the oldest Node that package.json allows', () => {
    const oldest = semver.minVersion(read('package.json').engines.node as string)!.version;
    expect(oldest).toBe('20.19.0');
    const lock = read('package-lock.json') as {
      packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean; version?: string }>;
    };
    const refusing = Object.entries(lock.packages)
      .filter(([name, p]) => name !== '' && !p.optional && p.engines && !Array.isArray(p.engines) && p.engines.node)
      .filter(([, p]) => !semver.satisfies(oldest, (p.engines as { node: string }).node))
      .map(
        ([name, p]) =>
          `${name.replace(/^.*node_modules\//, '')}@${p.version} wants node ${(p.engines as { node: string }).node}`,
      );
    expect(refusing).toEqual([]);
  });
});
