// How far V8 lets its heap grow past what is live before it collects (HEAP_GROWTH_PERCENT).
//
// After each full collection V8 sets the next one's trigger at the live size times a growing factor it picks from
// the allocation rate: up to 4 on a machine with memory to spare. This service under load keeps about 110 MB live
// (schema, compiled queries, pools, requests in flight) and allocates fast, so the heap grew to 300–450 MB and the
// process's resident memory past 500 MB (the hostile-mix benchmark, bench/hostile.ts) with nothing more to keep.
// A fixed factor (1 + percent/100) bounds that without a hard limit: --max-old-space-size would end the process with
// an out-of-memory error the day the live data needs more, which this never does (V8 still grows the heap to what is
// live; it only collects sooner). The cost is more frequent full collections, most of whose marking runs on V8's
// background threads.
import v8 from 'node:v8';

/** Sets V8's heap growing factor for this process to 1 + percent/100; 0 leaves V8's own. */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
