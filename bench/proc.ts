// CPU time of processes on this machine, from /proc (Linux): what the benchmarks divide by the requests they sent.
// Elsewhere every reading is null (or empty), and the benchmarks print no CPU figure.
import fs from 'node:fs';

/** The kernel's clock ticks per second, in which /proc's stat files count CPU time (100 on every common platform). */
const CLOCK_TICKS = 100;

/** A task's time on a core so far, in ms, as the scheduler counts it (nanoseconds); null where it keeps no count. */
function schedMs(dir: string): number | null {
  try {
    const ns = Number(fs.readFileSync(`${dir}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e6 : null;
  } catch {
    return null;
  }
}

/**
 * CPU time of a process (all its threads) or of one of its threads so far, in ms. The scheduler's own count
 * (`schedstat`, nanoseconds on a core, per thread) where the kernel keeps it, else utime + stime of `stat`, counted
 * in clock ticks of 10 ms. (Both agreed within 5% on a PostgreSQL server's processes over 6 s of one-row reads; a
 * thread that has ended drops out of the per-thread sum, and the services' threads live as long as they do.)
 */
function readCpuMs(pid: number, thread?: number): number {
  if (thread !== undefined) {
    const ms = schedMs(`/proc/${pid}/task/${thread}`);
    if (ms !== null) return ms;
  } else {
    let total = 0;
    let counted = true;
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      const ms = schedMs(`/proc/${pid}/task/${t}`);
      if (ms === null) counted = false;
      else total += ms;
    }
    if (counted) return total;
  }
  const stat = fs.readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/**
 * CPU time (user + system) a process has used so far, in ms; with `thread`, only that thread's (a process's main
 * thread has the process's id). Null where there is no /proc or the process is gone.
 */
export function cpuMs(pid: number | undefined, thread?: number): number | null {
  if (pid === undefined) return null;
  try {
    return readCpuMs(pid, thread);
  } catch {
    return null;
  }
}

/** CPU time (ms) each process named `postgres` on this machine has used so far, by pid (empty without /proc). */
export function postgresCpu(): Map<number, number> {
  const out = new Map<number, number>();
  let pids: string[] = [];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const d of pids) {
    try {
      if (fs.readFileSync(`/proc/${d}/comm`, 'utf8') === 'postgres\n') out.set(Number(d), readCpuMs(Number(d)));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** CPU the PostgreSQL processes used between two postgresCpu() readings (a process started meanwhile counts whole). */
export function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number | null {
  if (after.size === 0) return null;
  let ms = 0;
  for (const [pid, t] of after) ms += t - (before.get(pid) ?? 0);
  return ms;
}
