// The test helpers' pool of embedded databases (test/helpers/lite-pool.ts): a database used again is indistinguishable
// from one opened fresh from the template, and one whose schema a test changed is not used again.
import { describe, expect, it } from 'vitest';
import { leaseLite } from './helpers/lite-pool.js';
import { startTestApp } from './helpers/app.js';

describe('embedded databases used again', () => {
  it('come back empty: rows gone, ids from 1 again, the seeded rows back, settings and locks reset', async () => {
    const first = await startTestApp('pglite');
    const seeded = await first.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM search_setting`);
    const fresh = await first.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "user"`);
    await first.user('alice');
    await first.user('bob');
    await first.app.db.session(async (s) => {
      await s.exec(`SET statement_timeout = '1234ms'; SELECT pg_advisory_lock(42)`);
    });
    await first.app.db.query(`DELETE FROM search_setting`);
    const used = first.prisma;
    await first.close();

    const second = await startTestApp('pglite');
    try {
      expect(second.prisma, 'the same database, used again').toBe(used);
      const [users] = await second.app.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "user"`);
      expect(users!.n).toBe(fresh[0]!.n);
      expect(await second.app.db.query(`SELECT count(*)::int AS n FROM search_setting`)).toEqual(seeded);
      // The first user of the new app gets the id a fresh database gives.
      const carol = await second.user('carol');
      const alice = (await second.app.db.query<{ id: number }>(`SELECT min(id)::int AS id FROM "user"`))[0]!.id;
      expect(carol.userId).toBe(alice);
      const [timeout] = await second.app.db.query<{ t: string }>(`SHOW statement_timeout`);
      expect(timeout!.t).not.toBe('1234ms');
      const [lock] = await second.app.db.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(42) AS ok`);
      expect(lock!.ok).toBe(true);
      expect(second.app.db.statements()).toBeGreaterThan(0);
    } finally {
      await second.close();
    }
  });

  it('one whose schema a test changed is closed, not used again', async () => {
    const db = await leaseLite();
    await db.query(`CREATE TABLE lite_pool_probe (id int)`);
    await db.close();
    const next = await leaseLite();
    try {
      const [t] = await next.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'lite_pool_probe'`,
      );
      expect(t!.n).toBe(0);
    } finally {
      await next.close();
    }
  });
});
