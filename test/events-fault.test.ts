// The outbox under a crash: two instances on one PostgreSQL database and Redis; the one that takes the writes (a
// child process) is killed with SIGKILL during a burst of comments. Every comment that committed must still reach
// the webhook at least once (same webhook-id on repeats) and the subscribers of the other instance.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPER_KEY, startTestApp, type TestApp } from './helpers/app.js';
import { REDIS_URL, redisAnswers } from './helpers/redis.js';
import { serviceArgs } from './helpers/built.js';

const redisUp = await redisAnswers();
const BURST = 1000;
/** The webhook attempt deadline of both instances: loopback answers take far less. */
const LEASE_TIMEOUT_SECONDS = 2;

describe.skipIf(!process.env.TEST_DATABASE_URL || !redisUp)('kill -9 of the dispatching instance mid-burst', () => {
  let b: TestApp;
  let receiver: http.Server;
  const delivered = new Map<number, Set<string>>(); // comment id → webhook-ids seen
  let hookUrl = '';
  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const msg = JSON.parse(body) as { type: string; data: { comment_id: number } };
        const seen = delivered.get(msg.data.comment_id) ?? new Set();
        seen.add(String(req.headers['webhook-id']));
        delivered.set(msg.data.comment_id, seen);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    b = await startTestApp('postgres', {
      redisUrl: REDIS_URL,
      redisChannelPrefix: `fault${process.pid}:`,
      externalUrlAllowPrivate: true,
      commentFloodSeconds: 0,
      rateLimitPerMinute: 0,
      // B finds the deliveries A claimed once A's lease on them runs out: it polls the outbox as deployed (not the
      // tests' slow idle poll), and its attempts have the short deadline A's have.
      webhooks: { retrySeconds: [1, 1, 1], timeoutMs: LEASE_TIMEOUT_SECONDS * 1000, pollMs: 500 },
    });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
  });

  it(`${BURST} comments, the writer killed during the burst: every committed one is delivered and heard on B`, async () => {
    const cat = (await b.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Fault' } })).body.category
      .category_id;
    const owner = await b.user('burst');
    const d = (
      await b.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: cat, title: 'F' } })
    ).body.download.download_id as number;
    const hook = await b.rest('POST', '/api/mc-dm-webhooks/', {
      form: { url: hookUrl, events: ['comment.posted'], download_id: d },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    // A subscriber on B, listening on its own event bus (fed through Redis by whichever instance dispatches).
    const heard = new Set<number>();
    const stream = b.app.services.events.subscribe('commentPosted', d);
    void (async () => {
      for await (const e of stream) heard.add(e.commentId);
    })();

    const child = spawn(process.execPath, serviceArgs(), {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: {
        ...(process.env as Record<string, string>),
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: b.config.dataDir,
        LOG_LEVEL: 'info',
        DM_BOOTSTRAP_KEY: SUPER_KEY,
        DATABASE_URL: b.app.db.url!,
        REDIS_URL,
        REDIS_CHANNEL_PREFIX: `fault${process.pid}:`,
        EXTERNAL_URL_ALLOW_PRIVATE: '1',
        COMMENT_FLOOD_SECONDS: '0',
        RATE_LIMIT_PER_MINUTE: '0',
        WEBHOOK_RETRY_SECONDS: '1,1,1',
        // A's lease on a delivery it claimed is twice the attempt's deadline and 5 s: what B waits out once A is
        // killed (25 s with the default 10 s deadline).
        WEBHOOK_TIMEOUT_SECONDS: String(LEASE_TIMEOUT_SECONDS),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`instance A did not start: ${out}`)), 120_000);
        const take = (chunk: Buffer) => {
          out += chunk.toString();
          const m = /"url":"(http:[^"]+)"/.exec(out) ?? /listening.*?(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        };
        child.stdout.on('data', take);
        child.stderr.on('data', take);
      });
      // The burst, 20 at a time, through A; A is killed after a third of it, and the rest goes through B.
      let next = 0;
      let answered = 0;
      let killed = false;
      const post = async () => {
        while (next < BURST) {
          const i = next++;
          if (!killed && answered >= BURST / 3) {
            killed = true;
            child.kill('SIGKILL');
          }
          const send = (base: string) =>
            fetch(`${base}/api/mc-dm-comments/`, {
              method: 'POST',
              headers: { 'Forum-Api-Key': owner.key, 'content-type': 'application/x-www-form-urlencoded' },
              body: `download_id=${d}&message=burst+${i}`,
            });
          // Once A is gone the client turns to B (a write cut mid-flight on A may or may not have committed).
          await send(killed ? b.url : url).then(
            () => answered++,
            () =>
              send(b.url).then(
                () => answered++,
                () => {},
              ),
          );
        }
      };
      await Promise.all(Array.from({ length: 20 }, post));
      await exited;
      expect(killed).toBe(true);
      const committed = (await b.prisma.comment.findMany({ where: { downloadId: d }, select: { id: true } })).map(
        (c) => c.id,
      );
      expect(committed.length).toBeGreaterThan(0);
      // B picks up what A left: undispatched rows at once, deliveries A had claimed once their lease runs out.
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        if (committed.every((id) => delivered.has(id) && heard.has(id))) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      const missingHook = committed.filter((id) => !delivered.has(id));
      const missingSub = committed.filter((id) => !heard.has(id));
      console.log(
        `fault: ${committed.length} committed of ${BURST} sent (A killed after ${Math.round(BURST / 3)} answers, the rest through B); ` +
          `webhook received ${delivered.size}, subscriber on B heard ${heard.size}; ` +
          `repeats: ${[...delivered.values()].filter((s) => s.size > 1).length} with more than one webhook-id`,
      );
      expect(missingHook).toEqual([]);
      expect(missingSub).toEqual([]);
      // Repeats keep their webhook-id: one id per comment.
      for (const ids of delivered.values()) expect(ids.size).toBe(1);
      // Nothing was delivered that did not commit.
      expect([...delivered.keys()].filter((id) => !committed.includes(id))).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await exited;
      await stream.return?.(undefined);
    }
  }, 150_000);
});
