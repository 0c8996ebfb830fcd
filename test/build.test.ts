// The build `npm start` runs (scripts/build.mjs) and the ready-made database it makes for fresh data directories.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { migrate, readMigrations } from '../src/db/migrate.js';
import { ensureTemplate, templateFile } from '../src/db/template.js';

const root = path.resolve(import.meta.dirname, '..');
const made: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-build-'));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});
const build = () =>
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, encoding: 'utf8', stdio: 'pipe' });

describe('npm run build', () => {
  it('leaves dist/ with the compiled entry points and a matching ready-made database, and writes nothing when nothing changed', () => {
    build();
    for (const file of ['dist/src/main.js', 'dist/src/cli/admin.js', 'dist/rest-adapter/plugin.js'])
      expect(fs.existsSync(path.join(root, file))).toBe(true);
    expect(fs.existsSync(templateFile())).toBe(true);
    const stamp = path.join(root, 'dist', '.sources.json');
    const before = fs.statSync(stamp).mtimeMs;
    const main = fs.statSync(path.join(root, 'dist/src/main.js')).mtimeMs;
    build();
    expect(fs.statSync(stamp).mtimeMs).toBe(before);
    expect(fs.statSync(path.join(root, 'dist/src/main.js')).mtimeMs).toBe(main);
  }, 120_000);
});

/**
 * The packages a built file loads before it runs: its static imports, and theirs through our own files (chunks, the
 * generated client), but not what it imports with `import()` when it needs it.
 */
function packagesLoadedAtStart(file: string): string[] {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (f: string) => {
    if (seen.has(f)) return;
    seen.add(f);
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(
      /^(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm,
    )) {
      const spec = (m[1] ?? m[2])!;
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(f), spec));
      else if (!spec.startsWith('node:'))
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(path.join(root, file));
  return [...packages].sort();
}

describe('what the built entries load at start', () => {
  it('the service loads the S3 SDK and ioredis only when configured to use them', () => {
    build();
    const loaded = packagesLoadedAtStart('dist/src/main.js');
    expect(loaded).toEqual(expect.arrayContaining(['@electric-sql/pglite', '@prisma/client', 'graphql', 'pg']));
    expect(loaded.filter((p) => p.startsWith('@aws-sdk/') || p === 'ioredis')).toEqual([]);
  }, 120_000);

  it('the admin CLI loads no database package for --help, a usage error or a command through --url', () => {
    build();
    expect(packagesLoadedAtStart('dist/src/cli/admin.js')).toEqual([]);
    const help = execFileSync(process.execPath, ['dist/src/cli/admin.js', '--help'], { cwd: root, encoding: 'utf8' });
    expect(help).toMatch(/Commands:[\s\S]*keys/);
  }, 120_000);
});

describe('ready-made embedded database', () => {
  it('is named after the migrations: another set of migrations needs another one', () => {
    const all = readMigrations();
    expect(templateFile(all)).not.toBe(templateFile(all.slice(0, -1)));
    expect(templateFile(all.map((m, i) => (i === 0 ? { ...m, checksum: 'c'.repeat(64) } : m)))).not.toBe(
      templateFile(all),
    );
  });

  it('gives a fresh data directory every migration before the migrator runs, and a restart keeps its data', async () => {
    await ensureTemplate();
    const dir = path.join(tmp(), 'db');
    const db = await openDatabase({ pgliteDir: dir });
    try {
      const rows = await db.query<{ migration_name: string }>(
        'SELECT migration_name FROM "_prisma_migrations" ORDER BY migration_name',
      );
      expect(rows.map((r) => r.migration_name)).toEqual(readMigrations().map((m) => m.name));
      expect(await migrate(db)).toEqual([]);
      // only the database the service uses: PostgreSQL's template databases are left out (fewer files to write)
      expect((await db.query<{ datname: string }>('SELECT datname FROM pg_database')).map((r) => r.datname)).toEqual([
        'postgres',
      ]);
      await db.prisma.group.create({ data: { name: 'kept' } });
    } finally {
      await db.close();
    }
    const again = await openDatabase({ pgliteDir: dir });
    try {
      expect((await again.prisma.group.findMany()).map((g) => g.name)).toEqual(['kept']);
    } finally {
      await again.close();
    }
  });

  it('makes a tarball once, and replaces one that no longer matches', async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'stale.tar.gz'), 'old');
    const first = await ensureTemplate(dir);
    expect(first.made).toBe(true);
    expect(fs.readdirSync(dir)).toEqual([path.basename(first.file)]);
    expect(await ensureTemplate(dir)).toEqual({ file: first.file, made: false });
  });
});
