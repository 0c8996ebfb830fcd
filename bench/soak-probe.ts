// The soak's probe, in its own process so that the load generator's event loop does not add to what it measures:
// one client doing GET <url> every --interval ms for --seconds, then printing its latencies (ms) and the number of
// 5xx answers as one JSON line on stdout.
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string' },
    key: { type: 'string' },
    seconds: { type: 'string' },
    interval: { type: 'string', default: '20' },
  },
});
const until = Date.now() + Number(o.seconds) * 1000;
const latencies: number[] = [];
let fiveHundreds = 0;
while (Date.now() < until) {
  const t0 = performance.now();
  const res = await fetch(o.url!, { headers: { 'Forum-Api-Key': o.key! } });
  await res.arrayBuffer();
  latencies.push(performance.now() - t0);
  if (res.status >= 500) fiveHundreds++;
  await new Promise((r) => setTimeout(r, Number(o.interval)));
}
process.stdout.write(`${JSON.stringify({ latencies, fiveHundreds })}\n`);
