// Boots the real service on a fresh database for a test file, and talks to it over HTTP like a client.
// Embedded PGlite always; a PostgreSQL server too when TEST_DATABASE_URL is set (a fresh database per file).
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import pg from 'pg';
import { describe, inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Database, type DatabaseTarget } from '../../src/db/client.js';
import { startApp, type App } from '../../src/app.js';
import { createLogger } from '../../src/log.js';
import { leaseLite, pgliteTemplate } from './lite-pool.js';

export type DbKind = 'pglite' | 'postgres';
export const SUPER_KEY = 'dm_test_super_key_with_every_scope_000000000';

/** Runs `body` once per database kind; the PostgreSQL block is reported as skipped without TEST_DATABASE_URL. */
export function forEachDatabase(body: (kind: DbKind) => void): void {
  describe('embedded PGlite', () => body('pglite'));
  describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server', () => body('postgres'));
}

/**
 * forEachDatabase with the two databases' blocks run side by side; the tests of each block still run one after
 * another ("in order"), with its own app. For files whose tests mostly wait (slow senders, timeouts, retries, lags):
 * one block's waits overlap the other's, and the worker's core is not left idle meanwhile. Only for files whose
 * blocks share nothing but their code: no module-level state, spies or settings that a test of one block changes.
 */
export function forEachDatabaseSideBySide(body: (kind: DbKind) => void): void {
  describe.concurrent('embedded PGlite', () => {
    describe.sequential('in order', () => body('pglite'));
  });
  (process.env.TEST_DATABASE_URL ? describe.concurrent : describe.skip)('PostgreSQL server', () => {
    describe.sequential('in order', () => body('postgres'));
  });
}

/**
 * A fresh database on the TEST_DATABASE_URL server; dropped by the returned function. Empty by default; with
 * `migrated`, a copy of the run's migrated template database (test/global-setup.ts) when there is one, which spares
 * running every migration again for each database (the migrator then finds nothing to do). Its name starts with
 * the run's prefix (`inject('testDatabasePrefix')`): a database its test leaves is dropped at the end of the run.
 */
export async function freshPostgres(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL!;
  const name = `${inject('testDatabasePrefix') || 'dcs_test_'}${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const template = opts.migrated ? inject('postgresTemplate') : undefined;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
  // A test database need not outlive a crash of the server: its commits do not wait for the disk (what every session
  // sees is the same; only the last commits before a crash of the server could be lost).
  await admin.query(`ALTER DATABASE "${name}" SET synchronous_commit = off`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A fresh migrated database of `kind` for a test that opens its own (the service's `startApp` then finds no
 * migration to run): an in-memory PGlite loaded from the build's template, or a copy of the run's PostgreSQL template.
 * `drop` removes the PostgreSQL one (the PGlite one goes with its `close()`).
 */
export async function migratedDatabase(kind: DbKind): Promise<{ target: DatabaseTarget; drop(): Promise<void> }> {
  if (kind === 'postgres') {
    const fresh = await freshPostgres({ migrated: true });
    return { target: { url: fresh.url }, drop: fresh.drop };
  }
  return { target: { memory: true, loadDataDir: pgliteTemplate() }, drop: async () => {} };
}

export interface RestOptions {
  key?: string | null;
  /** Sent as application/x-www-form-urlencoded (arrays as name[]). */
  form?: Record<string, string | number | boolean | (string | number)[]>;
  json?: unknown;
  query?: Record<string, string | number>;
  headers?: Record<string, string>;
}

export interface RestResult {
  status: number;
  body: any;
  headers: Headers;
}

export class TestApp {
  constructor(
    readonly app: App,
    readonly config: Config,
    private readonly cleanup: () => Promise<void>,
  ) {}

  get url() {
    return this.app.url;
  }
  get prisma() {
    return this.app.db.prisma;
  }

  /**
   * The helpers send over HTTP while set: for tests of clients competing for the server (in-process requests that are
   * refused before any I/O never give the event loop back to timers).
   */
  overHttp = false;

  /**
   * Sends a request to the service the way the test helpers do: through its own fetch handler, in this process (the
   * same plugins and routes, no socket: about half the CPU of a request over HTTP), or over HTTP when TEST_OVER_HTTP=1.
   * Tests about the connection itself (timeouts, uploads, keep-alive) call `fetch(t.url…)` directly.
   */
  send(url: URL | string, init: RequestInit = {}): Promise<Response> {
    if (this.overHttp || process.env.TEST_OVER_HTTP === '1') return fetch(url, init);
    // A URL and its init, not a Request: the service makes the request as its HTTP server does, a string body with its
    // Content-Length as a client sends it (a web-stream body without one took the counted-body path, whose stream
    // transform no client over HTTP pays: 3.6% of the authorization matrix's CPU).
    return this.app.fetch(new URL(url, this.url).toString(), init);
  }

  async rest(method: string, pathname: string, opts: RestOptions = {}): Promise<RestResult> {
    const url = new URL(pathname, this.url);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? SUPER_KEY : opts.key;
    if (key !== null) headers['Forum-Api-Key'] = key;
    let body: string | undefined;
    if (opts.form) {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.form)) {
        if (Array.isArray(v)) {
          for (const item of v) p.append(`${k}[]`, String(item));
        } else p.append(k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
      }
      body = p.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['content-type'] = 'application/json';
    }
    const res = await this.send(url, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** POST /graphql; returns the HTTP status and the parsed `{ data, errors }`. */
  async gql(
    query: string,
    variables: Record<string, unknown> = {},
    key: string | null = SUPER_KEY,
    headers: Record<string, string> = {},
  ) {
    const res = await this.send(new URL('/graphql', this.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key !== null ? { 'Forum-Api-Key': key } : {}), ...headers },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: any; errors?: any[] };
    return { status: res.status, ...body, codes: (body.errors ?? []).map((e: any) => e.extensions?.code) };
  }

  /** Runs a GraphQL operation that must succeed, returning its data. */
  async gqlOk(query: string, variables: Record<string, unknown> = {}, key: string | null = SUPER_KEY) {
    const r = await this.gql(query, variables, key);
    if (r.errors?.length) throw new Error(`GraphQL failed: ${JSON.stringify(r.errors)}`);
    return r.data;
  }

  /** Creates a user (admin mutation) and a user key bound to it with the given scopes. */
  async user(
    username: string,
    opts: { isAdmin?: boolean; isModerator?: boolean; groups?: string[]; scopes?: string[] } = {},
  ) {
    const { createUser } = await this.gqlOk(
      `mutation($input: CreateUserInput!) { createUser(input: $input) { user { userId username } } }`,
      {
        input: {
          username,
          isAdmin: opts.isAdmin ?? false,
          isModerator: opts.isModerator ?? false,
          groups: opts.groups ?? [],
        },
      },
    );
    const key = await this.key('USER', opts.scopes ?? ['all'], createUser.user.userId);
    return { userId: createUser.user.userId as number, username, key };
  }

  /** Creates an API key of `type` (GUEST | USER | SUPER) and returns the key itself. */
  async key(type: 'GUEST' | 'USER' | 'SUPER', scopes: string[] = ['all'], userId?: number): Promise<string> {
    const { createApiKey } = await this.gqlOk(
      `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { apiKeyId } } }`,
      { input: { type, scopes, userId } },
    );
    return createApiKey.key;
  }

  async close(opts?: { graceMs?: number }) {
    await this.app.close(opts);
    await this.cleanup();
  }
}

/** Starts the service on a fresh database of `kind`, listening on a free port, with SUPER_KEY bootstrapped. */
/**
 * Boots the service on a fresh database (and a fresh DATA_DIR), or, with `reopen`, on an existing database — the one a
 * killed process left — whose removal stays with the caller.
 */
export async function startTestApp(
  kind: DbKind = 'pglite',
  overrides: Partial<Config> = {},
  reopen?: DatabaseTarget,
): Promise<TestApp> {
  const dataDir = overrides.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-test-'));
  let db: Database;
  let dropDb = async () => {};
  if (reopen) {
    db = await openDatabase(reopen);
  } else if (kind === 'postgres') {
    const fresh = await freshPostgres({ migrated: true });
    // The statements per key as deployed (DATABASE_STATEMENTS_PER_KEY), unless the test sets its own.
    db = await openDatabase({
      url: fresh.url,
      statementsPerKey: overrides.databaseStatementsPerKey ?? loadConfig({}).databaseStatementsPerKey,
    });
    // Left for the end of the run (test/global-setup.ts drops the run's databases together): on PostgreSQL 15 each
    // DROP DATABASE waits for a checkpoint, which writes out what every other test file has changed (seconds each
    // while other files write). Nothing is connected to it once the service has closed.
    if (!inject('testDatabasePrefix')) dropDb = fresh.drop;
  } else {
    // One of the worker's embedded databases, emptied back to the template (test/helpers/lite-pool.ts).
    db = await leaseLite();
  }
  const config = loadConfig(
    {},
    {
      // Tests send many requests with one key; the rate limit is tested on its own (test/rate-limit.test.ts).
      port: 0,
      host: '127.0.0.1',
      dataDir,
      logLevel: 'silent',
      bootstrapKey: SUPER_KEY,
      rateLimitPerMinute: 0,
      // The outbox dispatcher runs when this instance commits; its idle poll (which finds rows other instances left)
      // would put statements into the tests that count them, so it is slow here unless a test sets it.
      webhooks: { ...loadConfig({}).webhooks, pollMs: 60_000 },
      // The test files run in parallel on a shared machine, where a slow but sound operation (200 simultaneous writes
      // to one row) can pass the 10 s production deadline; the tests of the deadline set their own.
      graphql: { ...loadConfig({}).graphql, timeoutMs: 60_000 },
      ...overrides,
    },
  );
  // The DATA_DIR made here is removed with the app (or when it fails to start); one the test gave is the test's.
  const removeDataDir = () => {
    if (!overrides.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  let app: App;
  try {
    app = await startApp(config, { db, log: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent') });
  } catch (err) {
    removeDataDir();
    throw err;
  }
  if (!overrides.baseUrl) config.baseUrl = app.url;
  return new TestApp(app, config, async () => {
    await dropDb();
    removeDataDir();
  });
}
