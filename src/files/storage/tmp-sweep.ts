// Temporary upload files: their names, which say which process owns them, and the start-up sweep that removes the
// ones a dead process left. ingest() and createFile() remove them on every path; a crash (kill -9, power loss) can
// still leave some, and several instances may share one DATA_DIR, so the sweep must spare every live upload.
//
// A name is `p<pid>.<host>.<run>.<uuid>.part`: the owner's pid, a tag of its host name, and a random tag of its run
// (a restarted container often gets the same pid again). At start a file is removed when its owner is gone:
//   - same host, another pid: process.kill(pid, 0) says no such process;
//   - same host, our own pid: an earlier run of this pid when the run differs (the same run: another app in this
//     process, alive);
//   - an owner that still runs, but a file untouched for a day: the pid was reused (no upload lives that long).
// Names without an owner on this host (older names, another machine on shared storage) fall back to their age: not
// written to since before this process started, by more than the HTTP idle timeout (a live upload writes more
// often than that, or the server cuts it).
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const HOST = crypto.createHash('sha256').update(os.hostname()).digest('hex').slice(0, 8);
const RUN = crypto.randomBytes(4).toString('hex');
const OWNED = /^p(\d+)\.([0-9a-f]{8})\.([0-9a-f]{8})\.[0-9a-f-]{36}\.part$/;
/** A file whose owner still runs is removed anyway when untouched this long: its pid was reused. */
export const REUSED_PID_MS = 24 * 3600_000;

/** A fresh temporary file name owned by this process. */
export function temporaryFileName(): string {
  return `p${process.pid}.${HOST}.${RUN}.${crypto.randomUUID()}.part`;
}

/** Whether a process with this pid runs on this host (EPERM: it runs, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

type Verdict = 'owner-gone' | 'owner-alive' | 'unknown-owner';

function ownerOf(name: string): Verdict {
  const m = OWNED.exec(name);
  if (!m || m[2] !== HOST) return 'unknown-owner';
  const pid = Number(m[1]);
  if (pid === process.pid) return m[3] === RUN ? 'owner-alive' : 'owner-gone';
  return pid > 0 && processAlive(pid) ? 'owner-alive' : 'owner-gone';
}

export async function sweepTemporaryFiles(
  tmpDir: string,
  idleMs: number,
  startedAt = Date.now() - process.uptime() * 1000,
): Promise<string[]> {
  const cutoff = startedAt - idleMs;
  const removed: string[] = [];
  let names: string[];
  try {
    names = await fsp.readdir(tmpDir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.endsWith('.part')) continue;
    const p = path.join(tmpDir, name);
    try {
      const st = await fsp.stat(p);
      if (!st.isFile()) continue;
      const owner = ownerOf(name);
      const gone =
        owner === 'owner-gone' ||
        (owner === 'owner-alive' && st.mtimeMs < Date.now() - REUSED_PID_MS) ||
        (owner === 'unknown-owner' && st.mtimeMs < cutoff);
      if (gone) {
        await fsp.rm(p, { force: true });
        removed.push(name);
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return removed;
}
