// Gives memory back once a burst of load has passed. Under load V8 sizes its heap to the allocation rate (the young
// generation alone grows to 32 MB) and keeps that size until its own memory reducer runs, which it may not do for
// minutes: RSS stays 100 MB and more above what the service needs once idle. When no request has been in flight
// for `idleMs`, and the heap has grown by `growthBytes` since the last release, this runs one memory-reducing
// collection (what V8 does on a low-memory notification: every space compacted, the young generation shrunk). It
// never runs while a request is in flight, and at most once per idle period.
import type http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';

type Collect = () => Promise<unknown>;

/**
 * V8's collector with the memory-reducing flavour. `--expose-gc` is turned on only while a fresh context is made, so
 * the function is not a global the application (or a dependency) could call.
 */
export function memoryReducingCollector(): Collect {
  const existing = (globalThis as { gc?: (o: object) => unknown }).gc;
  let gc = existing;
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
  /** Heap growth since the last release that makes a release worth it (default 16 MB). */
  growthBytes?: number;
  collect?: Collect;
  heapBytes?: () => number;
  /** After each release: the heap before and after, in bytes. */
  onRelease?(before: number, after: number): void;
}

/** Watches `server`'s requests; returns a function that stops watching. `idleMs` 0 turns it off. */
export function releaseMemoryWhenIdle(server: http.Server, options: IdleMemoryOptions): () => void {
  const { idleMs, growthBytes = 16 * 1024 * 1024 } = options;
  if (idleMs <= 0) return () => {};
  const collect = options.collect ?? memoryReducingCollector();
  const heapBytes = options.heapBytes ?? (() => v8.getHeapStatistics().total_heap_size);
  let inFlight = 0;
  let lastActivity = performance.now();
  let baseline = heapBytes();
  let collecting = false;

  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight++;
    lastActivity = performance.now();
    res.once('close', () => { inFlight--; lastActivity = performance.now(); });
  };
  server.on('request', onRequest);

  const check = () => {
    if (collecting) return;
    const now = heapBytes();
    // Growth counts from the smallest heap since the last release: V8 may have shrunk it on its own meanwhile.
    baseline = Math.min(baseline, now);
    if (inFlight > 0 || performance.now() - lastActivity < idleMs || now < baseline + growthBytes) return;
    const before = now;
    collecting = true;
    collect().then(() => {
      baseline = heapBytes();
      options.onRelease?.(before, baseline);
    }, () => {}).finally(() => { collecting = false; });
  };
  const timer = setInterval(check, Math.max(50, Math.floor(idleMs / 4)));
  timer.unref();
  return () => {
    clearInterval(timer);
    server.off('request', onRequest);
  };
}
