// Summaries of a V8 CPU profile (.cpuprofile, from `node --cpu-prof` or the inspector): self time by package (or
// folder of ours) and by function. Used by bench:profile and bench:soak.
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
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
): { packages: string[]; functions: string[]; totalMs: number } {
  const byPackage = selfTime(profile, (f) => packageOf(f.url));
  const byFunction = selfTime(
    profile,
    (f) => `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`,
  );
  const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
  const lines = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${(v / 1000).toFixed(0).padStart(6)} ms ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  return {
    packages: lines(byPackage, top.packages),
    functions: lines(byFunction, top.functions),
    totalMs: total / 1000,
  };
}
