// Summaries of a V8 CPU profile (.cpuprofile, from `node --cpu-prof` or the inspector): self time by package (or
// folder of ours) and by function, and inclusive time by function (the samples with it anywhere on the stack). Used by
// bench:profile and bench:soak; `npx tsx bench/cpu-profile.ts <file.cpuprofile>` prints one.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time in microseconds, grouped by `keyOf` applied to each sample's call frame. */
function selfTime(
  profile: CpuProfile,
  keyOf: (f: CpuProfile['nodes'][number]['callFrame']) => string,
): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const key = keyOf(byId.get(id)!.callFrame);
    out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return out;
}

const functionKey = (f: CpuProfile['nodes'][number]['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`;

/** Inclusive time in microseconds by function: each sample counts once for every function on its stack. */
function inclusiveTime(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = functionKey(byId.get(at)!.callFrame);
      if (key.startsWith('(root)')) continue;
      seen.add(key);
    }
    for (const key of seen) out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return out;
}

export function packageOf(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  const own = /\/(src\/[^/]+|rest-adapter|bench)\//.exec(url);
  if (m) return m[1]!;
  if (own) return own[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  if (url.startsWith('wasm')) return 'wasm';
  return url || '(native)';
}

/** Lines "   ms   %  name" for the `top` largest entries of self time by package and by function. */
export function summarize(
  profile: CpuProfile,
  top = { packages: 20, functions: 25 },
): { packages: string[]; functions: string[]; inclusive: string[]; totalMs: number; busyMs: number } {
  const byPackage = selfTime(profile, (f) => packageOf(f.url));
  const byFunction = selfTime(profile, functionKey);
  const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
  const lines = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${(v / 1000).toFixed(0).padStart(6)} ms ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  return {
    packages: lines(byPackage, top.packages),
    functions: lines(byFunction, top.functions),
    inclusive: lines(inclusiveTime(profile), top.functions),
    totalMs: total / 1000,
    busyMs: (total - (byFunction.get(functionKey({ functionName: '(idle)', url: '', lineNumber: -1 })) ?? 0)) / 1000,
  };
}

// A profile summarized from the command line: total and busy (not idle) time, self time by package and by function,
// inclusive time by function (percentages of the total).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const file of process.argv.slice(2)) {
    const s = summarize(JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile, { packages: 25, functions: 40 });
    console.log(`${file}: ${s.totalMs.toFixed(0)} ms sampled, ${s.busyMs.toFixed(0)} ms not idle`);
    console.log(`self time by package:\n${s.packages.join('\n')}`);
    console.log(`self time by function:\n${s.functions.join('\n')}`);
    console.log(`inclusive time by function:\n${s.inclusive.join('\n')}`);
  }
}
