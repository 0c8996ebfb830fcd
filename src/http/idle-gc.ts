// Memory back after a busy spell. Under load V8 sizes its heap to the allocation rate and keeps that size once the
// load is gone: the soak measured the heap at 220 MB fifteen seconds after a minute of load, of which a full
// collection left 76 MB in use. So when the service has served requests, has none in flight for IDLE_GC_SECONDS,
// and its heap has grown since the last collection, it asks V8 for a full collection that also hands unused pages
// back to the system. It runs only when no request is in flight, so nobody waits for it.
import type http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from '../log.js';

/** Collections made, for /metrics. */
export const idleCollections = { count: 0 };

type Collect = (options?: { type?: string; execution?: string; flavor?: string }) => void;
let collect: Collect | null | undefined;

/** V8's collector: `gc` when the process was started with --expose-gc, else exposed now (once). */
function collector(): Collect | null {
  if (collect !== undefined) return collect;
  collect = (globalThis as { gc?: Collect }).gc ?? null;
  if (!collect) {
    try {
      v8.setFlagsFromString('--expose-gc');
      collect = vm.runInNewContext('gc') as Collect;
    } catch {
      collect = null;
    }
  }
  return collect;
}

export interface IdleCollectionOptions {
  /** Quiet time after the last request before collecting. */
  idleMs: number;
  /** Heap growth since the last collection (or the start) below which there is nothing worth collecting. */
  growthBytes: number;
}

/** Watches `server`'s requests and collects garbage when it goes idle after work; returns the function that stops it. */
export function collectWhenIdle(server: http.Server, opts: IdleCollectionOptions, log: Logger): () => void {
  if (opts.idleMs <= 0) return () => {};
  let inFlight = 0;
  let worked = false;
  let lastEnded = Date.now();
  let baseline = v8.getHeapStatistics().total_heap_size;
  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight++;
    worked = true;
    res.once('close', () => { inFlight--; lastEnded = Date.now(); });
  };
  server.on('request', onRequest);
  const timer = setInterval(() => {
    if (!worked || inFlight > 0 || Date.now() - lastEnded < opts.idleMs) return;
    worked = false;
    const heap = v8.getHeapStatistics().total_heap_size;
    if (heap - baseline < opts.growthBytes) return;
    const gc = collector();
    if (!gc) return;
    const rss = process.memoryUsage.rss();
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    baseline = v8.getHeapStatistics().total_heap_size;
    idleCollections.count++;
    log.debug({ heapBefore: heap, heapAfter: baseline, rssFreed: rss - process.memoryUsage.rss() }, 'idle after work: garbage collected');
  }, Math.max(50, Math.min(1000, opts.idleMs / 4)));
  timer.unref();
  return () => {
    clearInterval(timer);
    server.off('request', onRequest);
  };
}
