// Reads against a running test app, and what the read cache did with them: for the tests of what a write evicts
// (test/read-cache-downloads.test.ts, test/read-cache-categories.test.ts). Each read is named and answers the body's
// text, as a client sees it, on either face, with the super-user key.
import fs from 'node:fs';
import { buildSchema, type DocumentNode, parse } from 'graphql';
import { expect } from 'vitest';
import { routes } from '../../rest-adapter/routes.js';
import type { Scope } from '../../src/db/cache-versions.js';
import { CacheScopes } from '../../src/http/cache-scope.js';
import { startTestApp, SUPER_KEY, type TestApp } from './app.js';

export type Read = () => Promise<string>;

/** The body of a REST GET of `path` on the instance at `base`. */
export async function restText(base: string, path: string): Promise<string> {
  return (await fetch(new URL(path, base), { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
}

/** The body of a /graphql POST of `query` with `variables` on the instance at `base`. */
export async function gqlText(base: string, query: string, variables: Record<string, unknown> = {}): Promise<string> {
  return (
    await fetch(new URL('/graphql', base), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
      body: JSON.stringify({ query, variables }),
    })
  ).text();
}

/** Reads each twice (the second is kept), then answers what each gave. */
export async function prime(app: TestApp, reads: Record<string, Read>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, read] of Object.entries(reads)) {
    out[name] = await read();
    const hits = app.app.readCache.counts.hit;
    expect(await read(), name).toBe(out[name]);
    expect(app.app.readCache.counts.hit, `${name} kept`).toBe(hits + 1);
  }
  return out;
}

/** Each read is a hit giving what it gave before. */
export async function allKept(
  app: TestApp,
  reads: Record<string, Read>,
  before: Record<string, string>,
): Promise<void> {
  for (const [name, read] of Object.entries(reads)) {
    const hits = app.app.readCache.counts.hit;
    expect(await read(), name).toBe(before[name]);
    expect(app.app.readCache.counts.hit, `${name}: a hit`).toBe(hits + 1);
  }
}

/** Each of the reads named is a miss (computed again); answers what each gave. */
export async function allMissed(
  app: TestApp,
  reads: Record<string, Read>,
  names: string[] = Object.keys(reads),
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const misses = app.app.readCache.counts.miss;
    out[name] = await reads[name]!();
    expect(app.app.readCache.counts.miss, `${name}: computed again`).toBe(misses + 1);
  }
  return out;
}

/**
 * Another instance on the PostgreSQL database of `t`, with the same files, the read cache on as in these tests and
 * views not counted (a flush of view counts would be a write). The caller closes it.
 */
export async function secondInstance(t: TestApp): Promise<TestApp> {
  const second = await startTestApp(
    'postgres',
    { cacheSeconds: 300, dataDir: t.config.dataDir, readCacheAdmitWindow: 0 },
    { url: t.app.db.url! },
  );
  second.app.services.views = undefined;
  return second;
}

/**
 * What the read cache scopes a GraphQL query, or a REST route's document, to (src/http/cache-scope.ts), read on the
 * printed schema: undefined when it answers by table.
 */
export function cacheScopes(): {
  of(query: string, variables?: Record<string, unknown>): Scope | undefined;
  ofRoute(method: string, path: string, variables: Record<string, unknown>): Scope | undefined;
} {
  const scopes = new CacheScopes(buildSchema(fs.readFileSync('schema.graphql', 'utf8')));
  return {
    of: (query, variables = {}) => scopes.scopeOf(parse(query), undefined, variables),
    ofRoute: (method, path, variables) => {
      const route = routes.find((r) => r.method === method && r.path === path);
      if (!route) throw new Error(`No route ${method} ${path}`);
      return scopes.scopeOf(route.document as DocumentNode, undefined, variables);
    },
  };
}
