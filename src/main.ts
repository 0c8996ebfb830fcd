// `npm start`: configuration from the environment, then the service until SIGINT/SIGTERM.
import { loadConfig, ConfigError } from './config.js';
import { startApp } from './app.js';
import { StartError } from './errors.js';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const app = await startApp(config);
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
