// Contract §9, "Deadline stops the work": when GRAPHQL_TIMEOUT_MS passes, the operation answers 503 operation_timeout
// and no statement of it keeps running on PostgreSQL. The operations are made slow by a lock the test holds on the
// table they read: without a cancel, their statements would wait in the server for as long as the lock is held.
// (On the embedded database statements run in-process, one at a time; the limits keep each short: bench/.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgres, startTestApp, type TestApp } from './helpers/app.js';

describe.skipIf(!process.env.TEST_DATABASE_URL)(
  'PostgreSQL server: the deadline cancels the statements of the operation',
  () => {
    let t: TestApp;
    let fresh: Awaited<ReturnType<typeof freshPostgres>>;
    let holder: pg.Client;
    /** Reads pg_stat_activity outside the holder's transaction (whose view of it is fixed at its first read). */
    let observer: pg.Client;
    let downloadId: number;
    let ownerKey: string;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-deadline-'));

    beforeAll(async () => {
      fresh = await freshPostgres();
      t = await startTestApp('postgres', { dataDir, readCacheMb: 0 }, { url: fresh.url });
      holder = new pg.Client({ connectionString: fresh.url });
      await holder.connect();
      observer = new pg.Client({ connectionString: fresh.url });
      await observer.connect();
      const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Slow' } })).body.category
        .category_id;
      const owner = await t.user('owner');
      ownerKey = owner.key;
      downloadId = (
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: 'Slow' },
        })
      ).body.download.download_id;
      t.config.graphql.timeoutMs = 500;
    });
    afterAll(async () => {
      await holder?.end();
      await observer?.end();
      await t?.close();
      await fresh?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    /** Statements of the service's connections running (or waiting for a lock) in the test's database now. */
    const running = async () =>
      (
        await observer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1 AND state = 'active'`,
          [(holder as unknown as { processID: number }).processID],
        )
      ).rows[0].n as number;

    async function noneWithin(ms: number): Promise<boolean> {
      const end = Date.now() + ms;
      for (;;) {
        if ((await running()) === 0) return true;
        if (Date.now() > end) return false;
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    // The statements of an operation reach the driver two ways (src/db/operation-scope.ts): the hand-written ones
    // carry their operation (a read; a write's transaction), Prisma's are bound by a scope around each of its calls.
    it.each([
      [
        '/graphql',
        'comment',
        () =>
          t.gql('query($d: Int!) { comments(downloadId: $d, perPage: 5) { nodes { commentId } } }', { d: downloadId }),
      ],
      ['REST', 'comment', () => t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: downloadId } })],
      // A write: its transaction's INSERT waiting for the lock.
      [
        '/graphql mutation',
        'comment',
        () =>
          t.gql(
            'mutation($d: Int!) { createComment(input: { downloadId: $d, message: "late" }) { comment { commentId } } }',
            { d: downloadId },
            ownerKey,
          ),
      ],
      // Through Prisma: two statements at once (the page and its count), then a write.
      ['/graphql through Prisma', 'webhook', () => t.gql('{ webhooks { nodes { webhookId } } }')],
      [
        '/graphql mutation through Prisma',
        'category',
        () => t.gql('mutation { createCategory(input: { title: "late" }) { category { categoryId } } }'),
      ],
    ] as const)(
      '%s: answers 503 operation_timeout, and its statement is gone from the server within a second',
      async (_face, table, send) => {
        await t.gqlOk('{ viewer { userId } }'); // the key is known and cached before the lock is taken
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        try {
          const answer = await send();
          expect(answer.status).toBe(503);
          const body = answer as { codes?: string[]; body?: { errors: { code: string }[] } };
          expect(body.codes ?? body.body!.errors.map((e) => e.code)).toEqual(['operation_timeout']);
          // The lock is still held: a statement that was not cancelled would still be waiting for it.
          expect(await noneWithin(1000)).toBe(true);
        } finally {
          await holder.query('ROLLBACK');
        }
        // The service goes on answering (the closed connections are replaced).
        const after = await t.gql('query($d: Int!) { comments(downloadId: $d, perPage: 5) { nodes { commentId } } }', {
          d: downloadId,
        });
        expect([after.status, after.errors]).toEqual([200, undefined]);
        expect((await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: downloadId } })).status).toBe(200);
      },
    );

    // Download reads asked for at the same moment share one statement (src/db/shared-reads.ts): it is cancelled once
    // every operation that joined it has passed its deadline.
    it('download reads sharing a statement: each answers 503 operation_timeout, and the statement is gone', async () => {
      await t.gqlOk('{ viewer { userId } }');
      const before = { ...t.app.db.sharedReadCounts() };
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE download IN ACCESS EXCLUSIVE MODE');
      try {
        const answers = await Promise.all([
          t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`, { query: { with: 'full' } }),
          t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`),
          t.gql('query($d: Int!) { download(downloadId: $d) { title } }', { d: downloadId }),
        ]);
        expect(answers.map((a) => a.status)).toEqual([503, 503, 503]);
        const after = t.app.db.sharedReadCounts();
        expect(after.reads - before.reads).toBe(3);
        // Two shapes of the read (REST's with=full, and the bare row both other reads ask for): the latter two shared
        // a statement, which only their two deadlines together could cancel.
        expect(after.statements - before.statements).toBeLessThan(3);
        expect(await noneWithin(1000)).toBe(true);
      } finally {
        await holder.query('ROLLBACK');
      }
      expect((await t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`)).status).toBe(200);
    });

    // A client that goes away (its connection closed) stops the operation as the deadline does, long before it: the
    // deadline also listens on the request's signal, which the HTTP layer aborts when the connection closes.
    it.each([
      [
        '/graphql',
        (signal: AbortSignal) =>
          fetch(`${t.url}/graphql`, {
            method: 'POST',
            signal,
            headers: { 'content-type': 'application/json', 'Forum-Api-Key': ownerKey },
            body: JSON.stringify({
              query: 'query($d: Int!) { comments(downloadId: $d, perPage: 5) { nodes { commentId } } }',
              variables: { d: downloadId },
            }),
          }),
      ],
      [
        'REST',
        (signal: AbortSignal) =>
          fetch(`${t.url}/api/mc-dm-comments/?download_id=${downloadId}`, {
            signal,
            headers: { 'Forum-Api-Key': ownerKey },
          }),
      ],
    ] as const)(
      '%s: a client that goes away has its statement gone from the server within a second',
      async (_face, send) => {
        await t.gqlOk('{ viewer { userId } }');
        t.config.graphql.timeoutMs = 60_000;
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE comment IN ACCESS EXCLUSIVE MODE');
        try {
          const gone = new AbortController();
          const sent = send(gone.signal);
          // The statement waits for the lock in the server.
          const end = Date.now() + 5000;
          while ((await running()) === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
          expect(await running()).toBeGreaterThan(0);
          gone.abort();
          await expect(sent).rejects.toThrow();
          // The lock is still held and the deadline a minute away: only the client's going can have cancelled it.
          expect(await noneWithin(1000)).toBe(true);
        } finally {
          await holder.query('ROLLBACK');
          t.config.graphql.timeoutMs = 500;
        }
      },
    );
  },
);
