import { openDatabase } from '../src/db/client.js';
import { seed } from './seed.js';
import { PGlite } from '@electric-sql/pglite';
const db = await openDatabase({ memory: true });
const s = await seed(db, 'dm_profile_key_000000000000000000000000000000', { users: 100, downloads: 5000, filesPerDownload: 2, commentsPerDownload: 4 });
const lite: PGlite = (db.prisma as any)._engineConfig?.adapter?.client ?? null;
async function time(name: string, n: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 50; i++) await fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  console.log(name.padEnd(40), ((performance.now() - t0) / n * 1000).toFixed(0), 'µs');
}
const id = s.downloadId;
await time('session raw select', 2000, () => db.session((x) => x.query('SELECT * FROM download WHERE id = $1', [id])));
await time('prisma findUnique', 2000, () => db.prisma.download.findUnique({ where: { id } }));
await time('prisma queryRaw', 2000, () => db.prisma.$queryRaw`SELECT * FROM download WHERE id = ${id}`);
await time('prisma findUnique incl category', 2000, () => db.prisma.download.findUnique({ where: { id }, include: { category: true, currentVersion: true } }));
await db.close();
