// The admin CLI as an operator runs it, on the configured database: on the embedded database with the service stopped
// (and refused, in one line, while it runs); on a PostgreSQL database while a service instance runs on it. Most command
// lines run in this process through `runAdmin` (src/cli/program.ts: the same commands, configuration and output, with
// the environment given); those about the process itself (its exit status and streams, and the lock on a DATA_DIR a
// running service holds, which another process meets) run the built CLI as a separate process (test/helpers/built.ts).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../src/cli/program.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { adminArgs } from './helpers/built.js';

const root = path.resolve(import.meta.dirname, '..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment a command line runs with: none of the configuration of the test's own process. */
const envOf = (env: Record<string, string>) => ({
  ...process.env,
  DATABASE_URL: '',
  DATA_DIR: '',
  DM_BOOTSTRAP_KEY: '',
  ...env,
});

/** A command line run in this process. */
async function cli(args: string[], env: Record<string, string>): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(args, {
    env: envOf(env),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}

/** A command line run as the operator runs it: the built CLI in a process of its own. */
function spawned(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...adminArgs(), ...args],
      { cwd: root, env: envOf(env), timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function json(args: string[], env: Record<string, string>): Promise<any> {
  const r = await cli([...args, '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const CATEGORY = `mutation($i: CreateCategoryInput!) { createCategory(input: $i) { category { categoryId } } }`;
const DENY_ADD = `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "add", value: DENY }) { ok } }`;

/** A top category with a DENY of `add` for registered users, and a child under it. */
async function deniedTree(t: TestApp, key: string): Promise<{ top: number; child: number }> {
  const top = (await t.gqlOk(CATEGORY, { i: { title: 'Maps' } }, key)).createCategory.category.categoryId;
  const child = (await t.gqlOk(CATEGORY, { i: { title: 'Desert maps', parentCategoryId: top } }, key)).createCategory
    .category.categoryId;
  await t.gqlOk(DENY_ADD, { c: top }, key);
  return { top, child };
}

describe('usage errors and refusals', () => {
  let env: Record<string, string>;
  beforeAll(() => {
    env = { DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-cli-')) };
  });
  afterAll(() => {
    fs.rmSync(env.DATA_DIR!, { recursive: true, force: true });
  });

  it('exit 2 with a usage message for unknown commands, bad arguments and missing options, touching no database', async () => {
    for (const args of [
      [],
      ['nope'],
      ['keys', 'revoke', 'abc'],
      ['keys', 'create', '--scopes', 'all'],
      ['keys', 'create', '--type', 'root', '--scopes', 'all'],
      ['perms', 'show'],
      ['keys', 'list', '--active', '--revoked'],
      ['--url', 'http://127.0.0.1:1', 'users', 'list'],
    ]) {
      const r = await cli(args, env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr.trim().length).toBeGreaterThan(0);
      expect(r.stdout).toBe('');
    }
    expect((await cli(['keys', 'revoke', 'abc'], env)).stderr).toMatch(
      /invalid for argument 'id'\. expected a whole number/,
    );
    // As a process: the status is the process's exit status, the message on its stderr.
    const run = await spawned(['nope'], env);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(/^error: unknown command 'nope'/);
    expect(fs.readdirSync(env.DATA_DIR!)).toEqual([]);
    const help = await cli(['--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Commands:[\s\S]*keys/);
  }, 120_000);

  it('exit 1 with one line when the service refuses', async () => {
    const r = await spawned(['keys', 'revoke', '999'], env);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr.trim().split('\n')).toEqual(['error: The requested api key (999) could not be found.']);
    expect((await cli(['users', 'create', 'carol'], env)).code).toBe(0);
    const dup = await cli(['users', 'create', 'carol'], env);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('error: The username "carol" is already taken.\n');
    const noUser = await cli(['keys', 'create', '--type', 'user', '--user', 'nobody', '--scopes', 'all'], env);
    expect(noUser).toMatchObject({ code: 1, stderr: 'error: No user named "nobody" exists.\n' });
  }, 120_000);
});

describe('embedded database', () => {
  let dataDir: string;
  let env: Record<string, string>;
  const dbDir = () => path.join(dataDir, 'db');
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-cli-'));
    env = { DATA_DIR: dataDir };
  });
  afterAll(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let recovered: { key: string; apiKey: { id: number } };
  let tree: { top: number; child: number };

  it('recovers: keys recover prints a fresh super-user key once, which then works over HTTP', async () => {
    const run = await spawned(['keys', 'recover', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    recovered = JSON.parse(run.stdout);
    expect(recovered.key).toMatch(/^dm_/);
    expect(recovered.apiKey).toMatchObject({
      type: 'super',
      isActive: true,
      scopes: expect.arrayContaining(['mc_dm_download:write']),
    });
    const text = await cli(['keys', 'list'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ID\s+TYPE\s+USER\s+STATE\s+LAST USED/m);
    expect(text.stdout).toMatch(/super\s+-\s+active\s+never/);
    expect(text.stdout).not.toContain(recovered.key); // shown once, never again

    const t = await startTestApp('pglite', { dataDir, bootstrapKey: undefined }, { pgliteDir: dbDir() });
    try {
      expect(t.app.generatedKey).toBeUndefined(); // a key exists: no bootstrap key is made
      const viewer = await t.gql('{ viewer { isSuperKey } }', {}, recovered.key);
      expect(viewer.data?.viewer?.isSuperKey ?? viewer.errors).toBe(true);
      tree = await deniedTree(t, recovered.key);

      // While the service holds the embedded database, another process finds it locked: one line, exit 1.
      const locked = await spawned(['users', 'list'], env);
      expect(locked.code).toBe(1);
      expect(locked.stderr).toBe(
        `error: The service is running on this DATA_DIR (${dataDir}): stop it, or use the GraphQL admin API with a key (--url <server> --key <key>).\n`,
      );
      // …or through the running server's GraphQL admin API.
      const remote = await json(['--url', t.url, '--key', recovered.key, 'keys', 'list'], env);
      expect(remote.rows.find((k: any) => k.id === recovered.apiKey.id).lastUsedAt).toBeGreaterThan(0);
      const created = await json(['--url', t.url, '--key', recovered.key, 'users', 'create', 'alice'], env);
      expect(created).toMatchObject({ username: 'alice', groups: ['registered'] });
      const remoteWhy = await cli(
        ['--url', t.url, '--key', recovered.key, 'perms', 'show', 'alice', String(tree.child)],
        env,
      );
      expect(remoteWhy.stdout).toMatch(
        new RegExp(`^add\\s+NO\\s+registered: DENY override on category ${tree.top}\\s`, 'm'),
      );
    } finally {
      await t.close();
    }
  }, 180_000);

  it('answers "why can\'t alice add in Desert maps" with the deciding override, service stopped', async () => {
    const r = await cli(['perms', 'show', 'alice', String(tree.child)], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^User \\d+ "alice" in category ${tree.child} "Desert maps":$`, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^add\\s+NO\\s+registered: DENY override on category ${tree.top}\\s`, 'm'));
    expect(r.stdout).toMatch(/^view\s+yes\s+registered: global grant/m);
    const data = await json(['perms', 'show', 'alice', String(tree.child)], env);
    expect(data.permissions.find((p: any) => p.permission === 'add')).toMatchObject({
      granted: false,
      decidedBy: { groupName: 'registered', level: 'category', categoryId: tree.top, value: 'deny' },
    });
    // After moving alice into the moderator group, that group's global grant decides instead.
    expect((await cli(['users', 'set-groups', 'alice', 'moderator'], env)).code).toBe(0);
    const after = await cli(['perms', 'show', 'alice', String(tree.child)], env);
    expect(after.stdout).toMatch(
      new RegExp(`^add\\s+yes\\s+moderator: global grant\\s+registered: DENY override on category ${tree.top}`, 'm'),
    );
    expect(await cli(['perms', 'show', 'alice', '999999'], env)).toMatchObject({
      code: 1,
      stderr: 'error: The requested category (999999) could not be found.\n',
    });
  }, 120_000);

  it('creates, lists and revokes keys and prefixes', async () => {
    const made = await json(
      [
        'keys',
        'create',
        '--type',
        'user',
        '--user',
        'alice',
        '--scopes',
        'mc_dm_category:read,mc_dm_download:read',
        '--title',
        'CI',
      ],
      env,
    );
    expect(made.apiKey).toMatchObject({
      type: 'user',
      title: 'CI',
      scopes: ['mc_dm_category:read', 'mc_dm_download:read'],
    });
    const revoke = await cli(['keys', 'revoke', String(made.apiKey.id)], env);
    expect(revoke).toMatchObject({ code: 0, stdout: `Key ${made.apiKey.id} (user, "CI") is revoked.\n` });
    const revoked = await json(['keys', 'list', '--user', 'alice', '--revoked'], env);
    expect(revoked.rows.map((k: any) => k.id)).toEqual([made.apiKey.id]);
    expect(revoked.rows[0].isActive).toBe(false);

    const prefix = await json(['prefixes', 'create', 'Beta'], env);
    expect((await cli(['prefixes', 'assign', String(prefix.id), String(tree.child)], env)).code).toBe(0);
    expect(await json(['prefixes', 'list'], env)).toEqual([
      { id: prefix.id, title: 'Beta', categoryIds: [tree.child] },
    ]);
    expect((await cli(['prefixes', 'assign', String(prefix.id), '999999'], env)).code).toBe(1);
  }, 120_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL database, service running', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    // Keys are cached for 5 minutes here: a revocation shows at once only if the CLI tells the service.
    t = await startTestApp('postgres', { cacheSeconds: 300 });
    env = { DATABASE_URL: t.app.db.url! };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('recovers a key the running service accepts, explains a refusal, and a revocation takes effect at once', async () => {
    const run = await spawned(['keys', 'recover', '--title', 'lost everything', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    const recovered = JSON.parse(run.stdout);
    expect((await t.rest('GET', '/api/mc-dm-categories/', { key: recovered.key })).status).toBe(200);

    const tree = await deniedTree(t, recovered.key);
    const bob = await json(['users', 'create', 'bob'], env);
    const why = await cli(['perms', 'show', String(bob.id), String(tree.child)], env);
    expect(why.stdout).toMatch(new RegExp(`^add\\s+NO\\s+registered: DENY override on category ${tree.top}\\s`, 'm'));

    const listed = await json(['keys', 'list'], env);
    expect(listed.rows.find((k: any) => k.id === recovered.apiKey.id)).toMatchObject({
      title: 'lost everything',
      isActive: true,
    });
    expect((await cli(['keys', 'revoke', String(recovered.apiKey.id)], env)).code).toBe(0);
    await expect
      .poll(
        async () => (await t.rest('GET', '/api/mc-dm-categories/', { key: recovered.key })).body.errors?.[0]?.code,
        { timeout: 2000 },
      )
      .toBe('api_key_inactive');
  }, 120_000);
});
