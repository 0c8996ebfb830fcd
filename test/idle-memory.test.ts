// Memory given back once load has passed (src/http/idle-memory.ts): once nothing has started or ended for a while
// (a request merely held open does not hold the memory), once per idle period, only when the heap grew; and the collector it uses really shrinks the heap without exposing `gc`.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { describe, it, type TestContext } from 'vitest';
import { releaseMemoryWhenIdle } from '../src/http/idle-memory.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MB = 1024 * 1024;

/**
 * A server that is closed, with its idle release stopped, when the test that made it finishes (the test's own hook:
 * the tests run side by side).
 */
function serverOfTest({ onTestFinished }: TestContext, handler: http.RequestListener) {
  const server = http.createServer(handler);
  let off = () => {};
  onTestFinished(async () => {
    off();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { server, watch: (start: () => () => void) => (off = start()) };
}

// Side by side: each test has its own server and fake heap, and most of their time is waiting for idle periods.
describe.concurrent('releasing memory when idle', () => {
  /** A server whose /slow requests stay in flight until `finish()`; a fake heap the test sets (MB). */
  async function harness(t: TestContext, idleMs: number) {
    let finish = () => {};
    const { server, watch } = serverOfTest(t, (req, res) => {
      if (req.url === '/slow') finish = () => res.end('slow');
      else res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const heap = { total: 100, used: 60 };
    const releases: [number, number][] = [];
    watch(() =>
      releaseMemoryWhenIdle(server, {
        idleMs,
        heap: () => ({ total: heap.total * MB, used: heap.used * MB }),
        collect: async () => {
          heap.total = heap.used + 10;
        },
        onRelease: (before, after) => releases.push([before / MB, after / MB]),
      }),
    );
    return { url, heap, releases, finish: () => finish(), get: async () => (await fetch(url)).text() };
  }

  it('releases once per idle period, counting from the last request to start or end', async (t) => {
    const { expect } = t;
    const h = await harness(t, 400);
    h.heap.total = 150; // grown under load
    expect(await h.get()).toBe('ok');
    await sleep(50);
    expect(h.releases).toEqual([]); // not idle for long enough yet
    await sleep(1000);
    expect(h.releases).toEqual([[150, 70]]);
    h.heap.total = 150; // grown again, by itself: no request since, so no release
    await sleep(600);
    expect(h.releases).toHaveLength(1);
  });

  it('does not wait for a request merely held open (a slow upload, a long download)', async (t) => {
    const { expect } = t;
    const h = await harness(t, 400);
    h.heap.total = 150;
    const slow = fetch(`${h.url}/slow`);
    await sleep(1000);
    // The held request started more than 400 ms ago and nothing has happened since: released while it is open.
    expect(h.releases).toEqual([[150, 70]]);
    h.finish();
    await (await slow).text();
    await sleep(1000);
    expect(h.releases).toHaveLength(1); // its end is activity, but nothing was served since the release
  });

  it('a connection dropped unanswered is not activity (a slow body cut off at its timeout)', async (t) => {
    const { expect } = t;
    const h = await harness(t, 1000);
    h.heap.total = 150;
    const client = new AbortController();
    const slow = fetch(`${h.url}/slow`, { signal: client.signal }).catch(() => 'dropped');
    await sleep(900);
    client.abort();
    expect(await slow).toBe('dropped');
    await sleep(600);
    // 1.5 s after the request started and 0.6 s after the drop: released, counting from the start.
    expect(h.releases).toEqual([[150, 70]]);
  });

  it('does nothing while requests keep coming, nor when V8 holds little it does not use', async (t) => {
    const { expect } = t;
    const h = await harness(t, 500);
    h.heap.total = 300;
    for (let i = 0; i < 15; i++) {
      expect(await h.get()).toBe('ok');
      await sleep(50);
    }
    expect(h.releases).toEqual([]);
    await sleep(1100);
    expect(h.releases).toEqual([[300, 70]]);
    // Less than 16 MB committed and unused: not worth a collection.
    h.heap.total = 75;
    await h.get();
    await sleep(1100);
    expect(h.releases).toHaveLength(1);
    // More, after requests: released again in the next idle period, whatever the last release left.
    h.heap.total = 100;
    await h.get();
    await sleep(1100);
    expect(h.releases).toEqual([
      [300, 70],
      [100, 70],
    ]);
  });

  it('0 turns it off', async (t) => {
    const { expect } = t;
    const { server } = serverOfTest(t, (_q, s) => s.end());
    const off = releaseMemoryWhenIdle(server, {
      idleMs: 0,
      collect: async () => {
        throw new Error('must not run');
      },
    });
    expect(server.listenerCount('request')).toBe(1); // only the server's own handler
    off();
  });
});

// Apart from the timing tests above: it runs a process that keeps a core busy for a while.
describe('the memory-reducing collector', () => {
  it('shrinks a heap grown by garbage, and leaves no global gc behind', async ({ expect }) => {
    // In a process of its own: a test worker's heap, after the files before this one, holds free space that the
    // garbage below would fill without growing it.
    const script = `
      import v8 from 'node:v8';
      import { memoryReducingCollector } from './src/http/idle-memory.ts';
      const hadGc = typeof globalThis.gc === 'function';
      const collect = memoryReducingCollector();
      let garbage = Array.from({ length: 1_500_000 }, (_, i) => ({ i, s: 'row ' + i }));
      const grown = v8.getHeapStatistics().total_heap_size;
      const length = garbage.length;
      garbage = null;
      await collect();
      const after = v8.getHeapStatistics().total_heap_size;
      process.stdout.write(JSON.stringify({ grown, after, length, hadGc, hasGc: typeof globalThis.gc === 'function' }));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        encoding: 'utf8',
      },
    );
    const r = JSON.parse(stdout);
    expect(r.length).toBe(1_500_000);
    expect(r.grown - r.after).toBeGreaterThan(50 * MB);
    expect(r.hasGc).toBe(r.hadGc);
  });
});
