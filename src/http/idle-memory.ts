// Gives memory back once a burst of load has passed. Under load V8 sizes its heap to the allocation rate (the young
// generation alone grows to 32 MB) and keeps that size until its own memory reducer runs, which it may not do for
// minutes: RSS stays 100 MB and more above what the service needs once idle. When no request has started or been
// answered for `idleMs` and V8 holds `slackBytes` or more of heap it does not use, this runs one memory-reducing
// collection (what V8 does on a low-memory notification: the young generation shrunk back, the old one compacted as
// far as V8 goes in one pass), at most once per idle period (only after requests were served since the last one).
// A request merely held open does not count as activity: a slow client dripping its body (kept up to the body
// timeout), a long file download or a subscription stream would otherwise keep the memory for as long as it lasts,
// and a pause of about 10 ms is nothing to such a request.
import type http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';

type Collect = () => Promise<unknown>;

/**
 * V8's collector with the memory-reducing flavour. `--expose-gc` is turned on only while a fresh context is made, so
 * the function is not a global the application (or a dependency) could call.
 */
export function memoryReducingCollector(): Collect {
  let gc = (globalThis as { gc?: (o: object) => unknown }).gc;
  if (typeof gc !== 'function') {
    v8.setFlagsFromString('--expose-gc');
    try {
      gc = vm.runInNewContext('gc') as (o: object) => unknown;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  return async () => gc!({ type: 'major', execution: 'async', flavor: 'last-resort' });
}

export interface IdleMemoryOptions {
  idleMs: number;
  /** Heap committed but not in use that makes a release worth it (default 16 MB). */
  slackBytes?: number;
  collect?: Collect;
  heap?: () => { total: number; used: number };
  /** After each release: the heap committed before and after, in bytes. */
  onRelease?(before: number, after: number): void;
}

const v8Heap = () => {
  const h = v8.getHeapStatistics();
  return { total: h.total_heap_size, used: h.used_heap_size };
};

/** Watches `server`'s requests; returns a function that stops watching. `idleMs` 0 turns it off. */
export function releaseMemoryWhenIdle(server: http.Server, options: IdleMemoryOptions): () => void {
  const { idleMs, slackBytes = 16 * 1024 * 1024, heap = v8Heap } = options;
  if (idleMs <= 0) return () => {};
  const collect = options.collect ?? memoryReducingCollector();
  let lastActivity = performance.now();
  // Requests since the last release: without any, the heap is as the last release (or V8) left it.
  let served = 0;
  let collecting = false;

  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    served++;
    lastActivity = performance.now();
    // An answer sent is activity; a connection dropped unanswered (a slow body cut off at its timeout) is not: 16 slow
    // clients would otherwise refresh the idle clock every few seconds.
    res.once('finish', () => {
      lastActivity = performance.now();
    });
  };
  server.on('request', onRequest);

  const check = () => {
    if (collecting || served === 0 || performance.now() - lastActivity < idleMs) return;
    const before = heap();
    // Worth it only when V8 holds memory it does not use: the young generation sized for the load, emptied pages.
    if (before.total - before.used < slackBytes) return;
    served = 0;
    collecting = true;
    collect()
      .then(
        () => options.onRelease?.(before.total, heap().total),
        () => {},
      )
      .finally(() => {
        collecting = false;
      });
  };
  const timer = setInterval(check, Math.max(50, Math.floor(idleMs / 4)));
  timer.unref();
  return () => {
    clearInterval(timer);
    server.off('request', onRequest);
  };
}
