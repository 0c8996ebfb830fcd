// Temporary upload files (`<uuid>.part`) are removed on every path by ingest() and createFile(); a crash
// (kill -9, power loss) can still leave some. At start the service removes every temporary file that no live
// upload can own: one not written to since before this process started, by more than the HTTP idle timeout
// (a live upload writes more often than that, or the server cuts it).
import fsp from 'node:fs/promises';
import path from 'node:path';

export async function sweepTemporaryFiles(tmpDir: string, idleMs: number, startedAt = Date.now() - process.uptime() * 1000): Promise<string[]> {
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
      if (st.isFile() && st.mtimeMs < cutoff) {
        await fsp.rm(p, { force: true });
        removed.push(name);
      }
    } catch { /* gone meanwhile */ }
  }
  return removed;
}
