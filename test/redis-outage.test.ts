// Contract §9 (outages), Redis: events published while Redis is unreachable for the publishing instance are kept (in
// a bounded buffer) and sent, in order, when it returns, so the subscribers of the other instances still get them; an
// instance whose subscribing connection was lost too reads back from the outbox what it missed.
// Two instances share PostgreSQL and Redis; A (and, for `everyone`, B) reaches Redis through a TCP proxy the test takes
// down for longer than ioredis would keep a command (about 11 s of retries), then brings back. Skipped without
// PostgreSQL or Redis.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgres, SUPER_KEY, TestApp } from './helpers/app.js';
import { REDIS_URL, redisAnswers } from './helpers/redis.js';
import { TcpProxy } from './helpers/proxy.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';
import { PublishBuffer } from '../src/events.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('PublishBuffer', () => {
  it('keeps publications while the connection is down, at most `limit` (the oldest dropped, with a warning), and sends them in order when ready', async () => {
    const sent: string[] = [];
    const listeners: (() => void)[] = [];
    const client = {
      status: 'reconnecting',
      publish: async (_channel: string, message: string) => {
        sent.push(message);
        return 1;
      },
      on: (_event: string, listener: () => void) => {
        listeners.push(listener);
      },
    };
    const warnings: string[] = [];
    const log = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          const l = JSON.parse(line);
          if (l.level >= 40) warnings.push(l.msg);
        },
      },
    );
    const buffer = new PublishBuffer(client as never, log, 3);
    for (const m of ['1', '2', '3', '4', '5']) buffer.publish('c', m);
    expect(buffer.size).toBe(3);
    expect(sent).toEqual([]);
    expect(warnings.some((w) => w.includes('oldest are dropped'))).toBe(true);
    client.status = 'ready';
    for (const l of listeners) l();
    buffer.publish('c', '6');
    expect(sent).toEqual(['3', '4', '5', '6']);
    expect(buffer.size).toBe(0);
  });
});

const up = Boolean(process.env.TEST_DATABASE_URL) && (await redisAnswers());

/**
 * `publisher`: only A loses Redis (B and its subscriber keep it). `everyone`: Redis is gone for both instances, as when
 * the Redis server itself is down: when Redis returns, A's publisher may send what it kept before B's subscribing
 * connection has subscribed again, and Redis keeps nothing for a subscriber that is not there; B reads what it missed
 * back from the outbox once it listens again, and delivers each event once, whichever way came first.
 */
// The two outages run side by side (each has its own instances, database, proxy and channel prefix): most of their
// time is waiting for ioredis to give up and for Redis to come back.
for (const cut of ['publisher', 'everyone'] as const)
  (up ? describe.concurrent : describe.skip)(
    `Redis unreachable for ${cut === 'publisher' ? 'the publishing instance' : 'every instance'}, then back`,
    () => {
      let a: TestApp;
      let b: TestApp;
      let drop: () => Promise<void>;
      const proxy = new TcpProxy('127.0.0.1', Number(new URL(REDIS_URL).port || 6379));
      const prefix = `dcs-outage-${crypto.randomBytes(4).toString('hex')}:`;
      let dataDir = '';

      async function instance(db: string, redisUrl: string): Promise<TestApp> {
        const config = loadConfig(
          {},
          {
            port: 0,
            host: '127.0.0.1',
            dataDir,
            logLevel: 'silent',
            bootstrapKey: SUPER_KEY,
            commentFloodSeconds: 0,
            rateLimitPerMinute: 0,
            redisUrl,
            redisChannelPrefix: prefix,
          },
        );
        const app = await startApp(config, {
          db: await openDatabase({ url: db }),
          log: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
        });
        return new TestApp(app, config, async () => {});
      }

      beforeAll(async () => {
        dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-redis-outage-'));
        const fresh = await freshPostgres();
        drop = fresh.drop;
        const port = await proxy.start();
        a = await instance(fresh.url, `redis://127.0.0.1:${port}`);
        b = await instance(fresh.url, cut === 'publisher' ? REDIS_URL : `redis://127.0.0.1:${port}`);
      });
      afterAll(async () => {
        await proxy.start().catch(() => {});
        await a?.close();
        await b?.close();
        await proxy.stop();
        await drop?.();
        if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      });

      it(`comments posted on A during a ${cut === 'publisher' ? 13 : 10} s outage reach a subscriber on B, in order, once Redis is back`, async () => {
        const user = await a.user('outage');
        const category = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Outage' } })).body.category
          .category_id;
        const d = (
          await a.rest('POST', '/api/mc-dm-downloads/', {
            key: user.key,
            form: { category_id: category, title: 'Outage' },
          })
        ).body.download.download_id;

        const received: number[] = [];
        const before = b.app.services.events.listenerCount;
        const client = createClient({
          url: `${b.url}/graphql`,
          headers: { 'Forum-Api-Key': user.key },
          singleConnection: false,
          retryAttempts: 0,
        });
        const iterator = client.iterate<{ commentPosted: { commentId: number } }>({
          query: 'subscription($d: Int!) { commentPosted(downloadId: $d) { commentId } }',
          variables: { d },
        });
        void (async () => {
          for await (const r of { [Symbol.asyncIterator]: () => iterator })
            received.push(r.data!.commentPosted.commentId);
        })().catch(() => {});
        try {
          await until('B to listen', () => b.app.services.events.listenerCount > before);
          await sleep(300); // B's SUBSCRIBE reaches Redis

          await proxy.stop();
          await sleep(200);
          const posted: number[] = [];
          for (const message of ['first while down', 'second while down']) {
            const r = await a.rest('POST', '/api/mc-dm-comments/', {
              key: user.key,
              form: { download_id: d, message },
            });
            expect(r.status).toBe(200);
            posted.push(r.body.comment.comment_id);
          }
          // Longer than ioredis keeps a queued command (it fails them after 20 reconnection attempts, about 11 s).
          await sleep(cut === 'publisher' ? 13_000 : 10_000);
          expect(received).toEqual([]);
          await proxy.start();

          await until('the events to reach B', () => received.length >= 2, 8000);
          expect(received).toEqual(posted);
          // And publications go straight out again.
          const after = (
            await a.rest('POST', '/api/mc-dm-comments/', { key: user.key, form: { download_id: d, message: 'after' } })
          ).body.comment.comment_id;
          await until('the later event', () => received.length >= 3);
          expect(received).toEqual([...posted, after]);
        } finally {
          await iterator.return?.();
        }
      }, 40_000);
    },
  );
