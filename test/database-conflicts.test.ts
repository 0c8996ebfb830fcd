// A write the database gives up on because of a concurrent one (deadlock, serialization failure, a lock not had in
// time) changed nothing and can be sent again: it answers 503 server_busy with Retry-After on both faces, never 500.
// The mapping on the error shapes the drivers and Prisma raise, then end to end on a PostgreSQL server where another
// session holds the download's row lock past the database's lock_timeout. (The embedded database has one connection:
// no other session can hold a lock there.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseConflict, headersOf, toErrorItem } from '../src/errors.js';
import { GraphQLError } from 'graphql';
import { freshPostgres, startTestApp, type TestApp } from './helpers/app.js';

describe('which errors are conflicts', () => {
  const adapter = (code: string) =>
    Object.assign(new Error('driver'), {
      name: 'DriverAdapterError',
      cause: { originalCode: code, kind: 'postgres', code },
    });
  it.each([
    ['a deadlock', adapter('40P01')],
    ['a serialization failure', adapter('40001')],
    ['a lock not had within lock_timeout', adapter('55P03')],
    [
      "Prisma's write conflict",
      Object.assign(new Error('Transaction failed due to a write conflict or a deadlock'), { code: 'P2034' }),
    ],
    [
      'a transaction that could not start in time',
      Object.assign(new Error('Transaction API error: Unable to start a transaction in the given time.'), {
        code: 'P2028',
      }),
    ],
    [
      'a transaction whose time ran out (a busy machine)',
      Object.assign(
        new Error(
          'Transaction API error: Transaction already closed: A commit cannot be executed on an expired transaction. The timeout for this transaction was 5000 ms, however 5312 ms passed since the start of the transaction.',
        ),
        { code: 'P2028' },
      ),
    ],
    [
      'a transaction rolled back under a running statement',
      new Error(
        'Transaction already closed: it was rolled back (its timeout passed, or it failed) while a statement of it was running; the statement was cancelled.',
      ),
    ],
  ])('%s answers server_busy with Retry-After, wrapped by GraphQL or not', (_name, err) => {
    expect(toErrorItem(err)).toMatchObject({ code: 'server_busy', params: { retry_after: 1 } });
    const wrapped = new GraphQLError('x', { originalError: err });
    expect(toErrorItem(wrapped).code).toBe('server_busy');
    expect(headersOf(wrapped)).toEqual({ 'Retry-After': '1' });
  });
  it.each([
    ['a unique violation', adapter('23505')],
    [
      'a transaction misused',
      Object.assign(new Error('Transaction API error: Transaction already closed'), { code: 'P2028' }),
    ],
    ['a plain error', new Error('boom')],
  ])('%s stays a server_error', (_name, err) => {
    expect(databaseConflict(err)).toBeNull();
    expect(toErrorItem(err).code).toBe('server_error');
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server: a row lock held past lock_timeout', () => {
  let t: TestApp;
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let holder: pg.Client;
  let downloadId: number;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-conflicts-'));
  beforeAll(async () => {
    fresh = await freshPostgres();
    const url = new URL(fresh.url);
    url.searchParams.set('options', '-c lock_timeout=300');
    t = await startTestApp('postgres', { dataDir }, { url: url.toString() });
    const owner = await t.user('owner');
    const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Locks' } })).body.category
      .category_id;
    downloadId = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: category, title: 'Before' },
      })
    ).body.download.download_id;
    holder = new pg.Client({ connectionString: fresh.url });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await t?.close();
    await fresh?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('REST and GraphQL answer server_busy, change nothing, and succeed once the lock is gone', async () => {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM download WHERE id = $1 FOR UPDATE', [downloadId]);
    try {
      const rest = await t.rest('PUT', `/api/mc-dm-downloads/${downloadId}/`, { form: { title: 'After REST' } });
      expect(rest.status).toBe(503);
      expect(rest.body.errors[0]).toMatchObject({ code: 'server_busy', params: { retry_after: 1 } });
      expect(rest.headers.get('retry-after')).toBe('1');
      const gql = await t.gql(
        `mutation { updateDownload(input: { downloadId: ${downloadId}, title: "After GraphQL" }) { download { title } } }`,
      );
      expect(gql.codes).toEqual(['server_busy']);
    } finally {
      await holder.query('ROLLBACK');
    }
    expect((await t.prisma.download.findUniqueOrThrow({ where: { id: downloadId } })).title).toBe('Before');
    expect((await t.rest('PUT', `/api/mc-dm-downloads/${downloadId}/`, { form: { title: 'After' } })).status).toBe(200);
    expect((await t.prisma.download.findUniqueOrThrow({ where: { id: downloadId } })).title).toBe('After');
  });
});
