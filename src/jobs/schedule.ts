// The one loop every periodic job runs in: a first run after `firstMs`, then one every `everyMs`, never two at once
// in this process (instances coordinate through the database, see each job), failures logged and retried next time.
import type { Logger } from '../log.js';

export interface JobTiming {
  firstMs: number;
  everyMs: number;
}

/** Starts `job`; returns a function that stops it. Timers never keep the process alive. */
export function schedule(name: string, job: () => Promise<void>, timing: JobTiming, log: Logger): () => void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await job();
    } catch (err) {
      log.error({ err, job: name }, `${name} failed`);
    } finally {
      running = false;
    }
  };
  const first = setTimeout(run, timing.firstMs);
  const timer = setInterval(run, timing.everyMs);
  first.unref();
  timer.unref();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
