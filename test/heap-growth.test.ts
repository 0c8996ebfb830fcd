// HEAP_GROWTH_PERCENT (src/http/heap-growth.ts): with the factor set, V8 collects before its heap is far past what is
// live. Two processes run the same load — 60 MB kept, garbage made fast beside it — one with V8's own policy, one
// after limitHeapGrowth(50): the second's heap stays within a bound the first goes well past. The load is a fixed
// number of allocations, not a time: on a busy machine a timed loop made too little garbage for V8's own policy to
// grow its heap (255 MB against 237 MB limited, in a full suite beside the other worker).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const load = (percent: number) => `
  import v8 from 'node:v8';
  import { limitHeapGrowth } from './src/http/heap-growth.ts';
  limitHeapGrowth(${percent});
  const live = [];
  for (let i = 0; i < 100_000; i++) live.push({ text: 'x'.repeat(500) + i, n: [i] });
  let peak = 0;
  let garbage = [];
  for (let round = 0; round < 1000; round++) {
    for (let i = 0; i < 1000; i++) garbage.push({ text: 'y'.repeat(200) + i, n: [i] });
    if (garbage.length > 200_000) garbage = [];
    peak = Math.max(peak, v8.getHeapStatistics().total_heap_size);
  }
  process.stdout.write(String(Math.round(peak / 2 ** 20)) + ' ' + live.length);
`;
const peakMb = (percent: number) =>
  Number(
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', load(percent)], {
      encoding: 'utf8',
    }).split(' ')[0],
  );

describe('HEAP_GROWTH_PERCENT', () => {
  it("keeps the heap near what is live under fast allocation, where V8's own policy lets it grow far past", () => {
    const own = peakMb(0);
    const limited = peakMb(50);
    console.log(`peak heap: V8's own policy ${own} MB, HEAP_GROWTH_PERCENT=50 ${limited} MB`);
    // Measured 229–238 MB against 432–470 MB here, alone and beside a benchmark (about 130 MB live at the most,
    // with the garbage not yet dropped).
    expect(limited).toBeLessThan(own * 0.75);
  });
});
