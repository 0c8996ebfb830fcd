// Baseline (b): the smallest honest server for the same reads — a bare Node HTTP handler, the same database
// driver, hand-written SQL, the same key check and the same JSON envelopes. No GraphQL, no Prisma, no permission
// tree. The REST adapter is measured against it.
import http from 'node:http';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { hashKey } from '../src/auth/keys.js';
import { PGLITE_EXTENSIONS } from '../src/db/pglite-extensions.js';

type Query = (sql: string, params: unknown[]) => Promise<Record<string, any>[]>;

async function connect(): Promise<{ query: Query; close(): Promise<void> }> {
  if (process.env.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
    return { query: async (sql, params) => (await pool.query(sql, params)).rows, close: () => pool.end() };
  }
  const lite = new PGlite(`${process.env.DATA_DIR}/db`, { extensions: PGLITE_EXTENSIONS });
  await lite.waitReady;
  return {
    query: async (sql, params) => (await lite.query<Record<string, any>>(sql, params as any[])).rows,
    close: () => lite.close(),
  };
}

const unix = (d: Date | null) => (d ? Math.floor(new Date(d).getTime() / 1000) : 0);
const BASE = process.env.BASE_URL ?? 'http://localhost';

function download(r: Record<string, any>) {
  return {
    download_id: r.id,
    category_id: r.categoryId,
    user_id: r.userId,
    title: r.title,
    tag_line: r.tagLine,
    description: r.description,
    view_url: `${BASE}/downloads/${r.id}/`,
    icon_url: r.iconUrl,
    cover_url: r.coverUrl,
    rating_avg: r.ratingAvg,
    rating_count: r.ratingCount,
    review_count: r.reviewCount,
    download_count: r.downloadCount,
    view_count: r.viewCount,
    last_update: unix(r.lastUpdate),
    created_date: unix(r.createdDate),
    download_state: r.state,
    prefix_id: r.prefixId ?? 0,
    current_version_id: r.currentVersionId ?? 0,
  };
}

const db = await connect();
const server = http.createServer(async (req, res) => {
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  try {
    const key = req.headers['forum-api-key'];
    const rows =
      typeof key === 'string'
        ? await db.query('SELECT id FROM api_key WHERE "keyHash" = $1 AND "isActive"', [hashKey(key)])
        : [];
    if (rows.length === 0) return send(401, { errors: [{ code: 'api_key_not_found', message: 'no key', params: {} }] });
    const url = new URL(req.url ?? '/', 'http://x');
    const one = /^\/api\/mc-dm-downloads\/(\d+)\/?$/.exec(url.pathname);
    if (one) {
      const [r] = await db.query('SELECT * FROM download WHERE id = $1', [Number(one[1])]);
      return r
        ? send(200, { download: download(r) })
        : send(404, { errors: [{ code: 'mc_dm_api_error.download_not_found', message: 'no', params: {} }] });
    }
    if (/^\/api\/mc-dm-downloads\/?$/.test(url.pathname)) {
      const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 20), 100);
      const page = Number(url.searchParams.get('page') ?? 1);
      const cat = url.searchParams.get('category_id');
      const where = cat ? `WHERE state = 'visible' AND "categoryId" = $1` : `WHERE state = 'visible'`;
      const params = cat ? [Number(cat)] : [];
      const [{ n }] = (await db.query(`SELECT count(*)::int AS n FROM download ${where}`, params)) as [{ n: number }];
      const list = await db.query(
        `SELECT * FROM download ${where} ORDER BY "lastUpdate" DESC, id DESC LIMIT ${perPage} OFFSET ${(page - 1) * perPage}`,
        params,
      );
      return send(200, {
        downloads: list.map(download),
        pagination: { page, per_page: perPage, total: n, last_page: Math.max(1, Math.ceil(n / perPage)) },
      });
    }
    send(404, { errors: [{ code: 'endpoint_not_found', message: 'no', params: {} }] });
  } catch (err) {
    send(500, { errors: [{ code: 'server_error', message: String(err), params: {} }] });
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('baseline ready\n'));
process.on('SIGTERM', () => server.close(() => db.close().then(() => process.exit(0))));
