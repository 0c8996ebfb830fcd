// `npm start`: configuration from the environment, then the service until SIGINT/SIGTERM.
// A fatal error (an exception or a rejection nothing handled) is logged as one line and ends the process with
// status 1, so that a supervisor restarts it (docs/deploy.md) instead of it running on in an unknown state.
import { loadConfig, ConfigError, type Config } from './config.js';
import { startApp, type App } from './app.js';
import { StartError } from './errors.js';
import { limitHeapGrowth } from './http/heap-growth.js';

function fatal(kind: string) {
  return (err: unknown) => {
    const e = err instanceof Error ? err : new Error(String(err));
    process.stderr.write(
      `${JSON.stringify({ level: 'fatal', time: Date.now(), msg: kind, err: { type: e.name, message: e.message, stack: e.stack } })}\n`,
    );
    process.exit(1);
  };
}
process.on('uncaughtException', fatal('uncaught exception: exiting'));
process.on('unhandledRejection', fatal('unhandled rejection: exiting'));

async function main() {
  // The modules above are loaded by now: the first figure of the start-up timings logged with "listening".
  const loadedAt = performance.now();
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  // The process is the service's own: V8's heap policy is set here, not by startApp (tests run it in theirs).
  limitHeapGrowth(config.heapGrowthPercent);
  let app: App;
  try {
    app = await startApp(config, { loadedAt });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  if (app.generatedKey) {
    // Shown once: only its hash is stored.
    process.stdout.write(`Bootstrap super-user API key: ${app.generatedKey}\n`);
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing requests in flight (at most 10 s)');
    await app.close({ graceMs: 10_000 });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  // A cause an operator can act on is one line; anything else keeps its stack for a bug report.
  if (err instanceof StartError) {
    console.error(`Could not start: ${err.message}`);
  } else {
    console.error('Could not start:', err);
  }
  process.exit(1);
});
