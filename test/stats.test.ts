// Daily statistics of downloads: file downloads and flushed views land in today's (UTC) row, reads cover every day
// of the range (zeros included), only editors read them, and bad input answers invalid_input/404/403 on both faces
// and both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, SUPER_KEY, startTestApp, type TestApp } from './helpers/app.js';
import { statsRange } from '../src/modules/stats/rules.js';
import { flushViews } from '../src/modules/downloads/views.js';
import { LIMITS } from '../src/config.js';

const DAY = 24 * 60 * 60 * 1000;
const today = () => new Date().toISOString().slice(0, 10);
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('statsRange', () => {
  const now = Date.UTC(2026, 10, 26, 13, 0);
  it('defaults to the last 30 days ending today (UTC); to alone gives the 30 days before it', () => {
    expect(statsRange(undefined, undefined, now)).toEqual({ from: '2026-10-28', to: '2026-11-26', days: 30 });
    expect(statsRange(null, '2026-03-01', now)).toEqual({ from: '2026-01-31', to: '2026-03-01', days: 30 });
    expect(statsRange('2026-11-20', null, now)).toEqual({ from: '2026-11-20', to: '2026-11-26', days: 7 });
    expect(statsRange('2024-01-01', '2024-12-31', now).days).toBe(366); // a leap year: the bound
  });
  it('refuses malformed or impossible days, from after to and more than 366 days, naming the field', () => {
    const fieldOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return `${(e as { code: string }).code}:${(e as { params: { field: string } }).params.field}`;
      }
      return 'ok';
    };
    for (const bad of ['2026-1-01', '2026-02-30', '26-01-01', '2026-13-01', '', 'today', '2026-01-01T00:00'])
      expect(
        fieldOf(() => statsRange(bad, '2026-03-01', now)),
        bad,
      ).toBe('invalid_input:from');
    expect(fieldOf(() => statsRange('2026-01-01', '2026-02-29', now))).toBe('invalid_input:to');
    expect(fieldOf(() => statsRange('2026-03-02', '2026-03-01', now))).toBe('invalid_input:from');
    expect(fieldOf(() => statsRange('2024-01-01', '2025-01-01', now))).toBe('invalid_input:to'); // 367 days
    expect(fieldOf(() => statsRange('2025-11-25', null, now))).toBe('invalid_input:from'); // 367 days to today
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let id: number;
  let fileId: number;
  const Q = `query($id: Int!, $from: String, $to: String) {
    download(downloadId: $id) { stats(from: $from, to: $to) { day downloads views } }
    downloadStats(downloadId: $id, from: $from, to: $to) { day downloads views } }`;
  const ROOT = `query($id: Int!, $from: String, $to: String) {
    downloadStats(downloadId: $id, from: $from, to: $to) { day downloads views } }`;
  const FIELD = `query($id: Int!, $from: String, $to: String) {
    download(downloadId: $id) { stats(from: $from, to: $to) { day downloads views } } }`;

  beforeAll(async () => {
    t = await startTestApp(kind);
    owner = await t.user('owner');
    reader = await t.user('reader');
    const cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'C' } })).body.category.category_id;
    const d = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: cat, title: 'D', version_string: '1.0' },
    });
    id = d.body.download.download_id;
    const f = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: d.body.download.current_version_id, external_url: 'https://example.com/d.zip', link_only: 1 },
    });
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    fileId = f.body.file.file_id;
  });
  afterAll(() => t?.close());

  it('counts file downloads and flushed views in today’s row, zeros elsewhere, on both faces', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${t.url}/api/mc-dm-files/${fileId}/data/`, {
        headers: { 'Forum-Api-Key': reader.key },
        redirect: 'manual',
      });
      expect(r.status).toBe(302);
    }
    await t.rest('GET', `/api/mc-dm-downloads/${id}/`, { key: reader.key }); // a view (not the owner's)
    await t.rest('GET', `/api/mc-dm-downloads/${id}/`, { key: owner.key }); // not a view
    await t.app.flushViews();
    const g = await t.gqlOk(Q, { id }, owner.key);
    expect(g.download.stats).toHaveLength(30);
    expect(g.download.stats.at(-1)).toEqual({ day: today(), downloads: 3, views: 1 });
    expect(g.download.stats[0]).toEqual({ day: dayOf(Date.now() - 29 * DAY), downloads: 0, views: 0 });
    expect(g.downloadStats).toEqual(g.download.stats);
    const r = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: owner.key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ stats: g.download.stats });
    // The totals moved with the days.
    const total = await t.prisma.download.findUniqueOrThrow({ where: { id } });
    expect([total.downloadCount, total.viewCount]).toEqual([3, 1]);
    // A second flush adds to the same row.
    await t.rest('GET', `/api/mc-dm-downloads/${id}/`, { key: SUPER_KEY });
    await t.app.flushViews();
    const again = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, {
      key: owner.key,
      query: { from: today() },
    });
    expect(again.body).toEqual({ stats: [{ day: today(), downloads: 3, views: 2 }] });
  });

  it('answers a range of past days, and CSV with format=csv', async () => {
    await t.prisma.$executeRaw`
      INSERT INTO "download_daily_stats" ("downloadId", "day", "downloads", "views") VALUES (${id}, '2024-02-29', 4, 9)`;
    const q = { from: '2024-02-28', to: '2024-03-01' };
    const json = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: owner.key, query: q });
    expect(json.body.stats).toEqual([
      { day: '2024-02-28', downloads: 0, views: 0 },
      { day: '2024-02-29', downloads: 4, views: 9 },
      { day: '2024-03-01', downloads: 0, views: 0 },
    ]);
    const csv = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, {
      key: owner.key,
      query: { ...q, format: 'csv' },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.body).toBe('day,downloads,views\r\n2024-02-28,0,0\r\n2024-02-29,4,9\r\n2024-03-01,0,0\r\n');
    const asJson = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, {
      key: owner.key,
      query: { ...q, format: 'json' },
    });
    expect(asJson.body).toEqual(json.body);
    const year = await t.gqlOk(FIELD, { id, from: '2024-01-01', to: '2024-12-31' }, owner.key);
    expect(year.download.stats).toHaveLength(366);
  });

  it('refuses bad input on both faces, naming the field, changing nothing', async () => {
    const before = await t.prisma.downloadDailyStat.findMany({ where: { downloadId: id }, orderBy: { day: 'asc' } });
    const cases: [Record<string, string>, string][] = [
      [{ from: '2024-2-1' }, 'from'],
      [{ to: '2024-02-30' }, 'to'],
      [{ from: '2024-03-02', to: '2024-03-01' }, 'from'],
      [{ from: '2024-01-01', to: '2025-01-01' }, 'to'],
      [{ from: '2000-01-01' }, 'from'],
    ];
    for (const [vars, field] of cases) {
      const r = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: owner.key, query: vars });
      expect([r.status, r.body.errors[0].code, r.body.errors[0].params.field], JSON.stringify(vars)).toEqual([
        400,
        'invalid_input',
        field,
      ]);
      for (const doc of [ROOT, FIELD]) {
        const g = await t.gql(doc, { id, ...vars }, owner.key);
        expect([g.codes[0], g.errors?.[0].extensions.params?.field ?? g.errors?.[0].extensions.field]).toEqual([
          'invalid_input',
          field,
        ]);
      }
    }
    const fmt = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: owner.key, query: { format: 'xml' } });
    expect([fmt.status, fmt.body.errors[0].code, fmt.body.errors[0].params.field]).toEqual([
      400,
      'invalid_input',
      'format',
    ]);
    // Unknown download: 404 on both faces (and with format=csv, a JSON error).
    const missing = await t.rest('GET', '/api/mc-dm-downloads/999999/stats/', { query: { format: 'csv' } });
    expect([missing.status, missing.body.errors[0].code]).toEqual([404, 'mc_dm_api_error.download_not_found']);
    expect((await t.gql(ROOT, { id: 999999 })).codes).toEqual(['mc_dm_api_error.download_not_found']);
    // Not an editor: 403 on both faces, on the field too.
    const denied = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: reader.key });
    expect([denied.status, denied.body.errors[0].code]).toEqual([403, 'do_not_have_permission']);
    expect((await t.gql(ROOT, { id }, reader.key)).codes).toEqual(['do_not_have_permission']);
    const field = await t.gql(FIELD, { id }, reader.key);
    expect(field.codes).toEqual(['do_not_have_permission']);
    expect(field.data.download).toBeNull();
    // A key without the read scope.
    const writeOnly = await t.key('USER', ['mc_dm_download:write'], owner.userId);
    const scoped = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: writeOnly });
    expect([scoped.status, scoped.body.errors[0].code]).toEqual([403, 'api_scope_missing']);
    expect(await t.prisma.downloadDailyStat.findMany({ where: { downloadId: id }, orderBy: { day: 'asc' } })).toEqual(
      before,
    );
  });

  it('a flush with views of a download deleted meanwhile writes the others and skips it', async () => {
    const before = await t.prisma.downloadDailyStat.findMany({ where: { downloadId: id } });
    await flushViews(t.prisma, new Map([[999_999, 3]]));
    expect(await t.prisma.downloadDailyStat.count({ where: { downloadId: 999_999 } })).toBe(0);
    await flushViews(
      t.prisma,
      new Map([
        [id, 2],
        [999_998, 1],
      ]),
    );
    const after = await t.prisma.downloadDailyStat.findMany({ where: { downloadId: id } });
    const todayOf = (rows: typeof before) => rows.find((r) => r.day.toISOString().startsWith(today()))?.views ?? 0;
    expect(todayOf(after)).toBe(todayOf(before) + 2);
  });

  it('a flush adds its views in batches of LIMITS.viewFlushBatch downloads, every batch, and empties the map', async () => {
    const before = await t.prisma.download.findUniqueOrThrow({ where: { id }, select: { viewCount: true } });
    // More than two batches of downloads that do not exist (skipped; negative ids sort first), the real one in the
    // third batch: its views are added only if every batch runs.
    const counts = new Map<number, number>();
    for (let i = 1; i <= 2 * LIMITS.viewFlushBatch + 10; i++) counts.set(-i, 1);
    counts.set(id, 4);
    await flushViews(t.prisma, counts);
    expect(counts.size).toBe(0);
    const after = await t.prisma.download.findUniqueOrThrow({ where: { id }, select: { viewCount: true } });
    expect(after.viewCount).toBe(before.viewCount + 4);
  });

  it('a team member (editOwn) may read the statistics; deleting the download removes its days', async () => {
    const member = await t.user('member');
    await t.gqlOk(
      `mutation($d: Int!, $u: Int!) { addTeamMember(input: { downloadId: $d, userId: $u }) { __typename } }`,
      { d: id, u: member.userId },
      owner.key,
    );
    const r = await t.rest('GET', `/api/mc-dm-downloads/${id}/stats/`, { key: member.key, query: { from: today() } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } });
    expect(await t.prisma.downloadDailyStat.count({ where: { downloadId: id } })).toBe(0);
  });
});
