// `npm run db:migrate`: applies pending migrations to DATABASE_URL, or to the embedded database under DATA_DIR
// (the embedded database is one process: stop the service first).
import { loadConfig } from '../config.js';
import { openDatabase, targetOf } from './client.js';
import { migrate } from './migrate.js';

const config = loadConfig();
const db = await openDatabase(targetOf(config));
try {
  const applied = await migrate(db);
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'The database is up to date.');
} finally {
  await db.close();
}
