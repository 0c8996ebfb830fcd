// `engines` in package.json promises Node 20.19 and later; every package the lock file installs must say it runs
// there too, or `npm ci` warns (EBADENGINE). The overrides in package.json exist for this (docs/architecture.md).
// Optional packages are left out: npm skips one whose engines do not match, without a warning.
// `allowScripts` in package.json says, for every package with an install script, whether npm may run it (npm 11
// lists the ones it does not cover after each install, and later releases skip them): the README says which and why.
import { execFileSync } from 'node:child_process';
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

  it('allowScripts decides for every package of the lock file with an install script, and names no other', () => {
    const allow = read('package.json').allowScripts as Record<string, boolean>;
    const lock = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = new Set(
      Object.entries(lock.packages)
        .filter(([name, p]) => name !== '' && p.hasInstallScript)
        .map(([name]) => name.replace(/^.*node_modules\//, '')),
    );
    // keys are a name, or name@version when pinned
    const named = Object.keys(allow).map((k) => k.replace(/(?<=.)@.*$/, ''));
    expect([...new Set(named)].sort()).toEqual([...withScripts].sort());
    // the README says what is allowed and what is denied
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme).toContain('`allowScripts`');
    for (const [name, allowed] of Object.entries(allow)) if (!allowed) expect(readme, name).toContain(name);
  });

  // npm's own answer, where npm has the command (11.16 and later) and node_modules is this checkout's own install
  // (a node_modules linked from another checkout makes npm take every package for a linked one, reviewed or not).
  const npmCanTell = (() => {
    if (fs.lstatSync(path.join(root, 'node_modules')).isSymbolicLink()) return false;
    try {
      execFileSync('npm', ['install-scripts', '--help'], { cwd: root, stdio: 'pipe', timeout: 30_000 });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!npmCanTell)('npm install-scripts ls finds no install script left unreviewed', () => {
    const out = execFileSync('npm', ['install-scripts', 'ls', '--json'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(JSON.parse(out).allowScripts).toEqual([]);
  });
});
