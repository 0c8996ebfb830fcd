// The floor in `npm run bench:mixed -- --floor`: the least work any server can do to answer the mixed benchmark's
// reads from the same PostgreSQL database. A bare node:http handler, a pg pool the size of the others', one SQL
// statement per request that builds the whole answer (the peer's JSON, the same columns and nested rows) inside
// PostgreSQL, and the statement's text written out unchanged: no GraphQL, no key check, no permission, no envelope
// built in JavaScript. What it reaches against the peer is the most any implementation could reach on the machine
// that runs it, since every one of them also reads the request, runs a statement and writes the answer.
// Routes: GET /get?id=N, /list?first=N&offset=N[&c=N][&full=1], /comments?d=N.
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
});

/** `'name', alias."name"` pairs for json_build_object. */
const columns = (alias: string, names: string) =>
  names
    .trim()
    .split(/\s+/)
    .map((n) => `'${n}', ${alias}."${n}"`)
    .join(', ');

// The columns of bench/peer-scenarios.ts's fragments D, DFull, C, V and Cm.
const D = columns(
  'd',
  `id categoryId userId title tagLine description iconUrl coverUrl ratingAvg ratingCount reviewCount downloadCount
   viewCount lastUpdate createdDate state prefixId currentVersionId`,
);
const FULL = `'isPasswordProtected', d."isPasswordProtected",
  'categoryByCategoryId', json_build_object(${columns('c', 'id parentId title description displayOrder downloadCount faIcon iconColor')}),
  'versionByCurrentVersionId', CASE WHEN v.id IS NULL THEN NULL
    ELSE json_build_object(${columns('v', 'id downloadId versionString releaseDate downloadCount state')}) END`;
const JOINS = `JOIN category c ON c.id = d."categoryId" LEFT JOIN version v ON v.id = d."currentVersionId"`;

const GET = `SELECT json_build_object('data', json_build_object('downloadById', json_build_object(${D}, ${FULL})))::text AS body
  FROM download d ${JOINS} WHERE d.id = $1`;

const list = (full: boolean, filter: boolean) => {
  const where = filter ? `WHERE d."categoryId" = $3` : '';
  return `SELECT json_build_object('data', json_build_object('allDownloads', json_build_object(
      'totalCount', (SELECT count(*) FROM download d ${where}),
      'nodes', COALESCE((SELECT json_agg(page.node ORDER BY page.n) FROM (
        SELECT row_number() OVER () AS n, json_build_object(${D}${full ? `, ${FULL}` : ''}) AS node
        FROM (SELECT * FROM download d ${where} ORDER BY d."lastUpdate" DESC, d.id DESC LIMIT $1 OFFSET $2) d
        ${full ? JOINS : ''}) page), '[]'::json))))::text AS body`;
};

const COMMENTS = `SELECT json_build_object('data', json_build_object('allComments', json_build_object(
    'totalCount', (SELECT count(*) FROM comment WHERE "downloadId" = $1),
    'nodes', COALESCE((SELECT json_agg(page.node ORDER BY page."commentDate" DESC, page.id DESC) FROM (
      SELECT m.id, m."commentDate", json_build_object(${columns('m', 'id downloadId userId commentDate message state lastEditDate editCount')},
        'userByUserId', json_build_object('username', u.username)) AS node
      FROM comment m JOIN "user" u ON u.id = m."userId"
      WHERE m."downloadId" = $1 ORDER BY m."commentDate" DESC, m.id DESC LIMIT 20) page), '[]'::json))))::text AS body`;

// Named statements, prepared once per connection, as the peer's are (PostGraphile 4 prepares its statements).
const whole = (text: string | null) => (text !== null && /^\d{1,9}$/.test(text) ? Number(text) : null);

/** The statement and its parameters for a request, or null when the request is not one of the routes. */
function statement(url: URL): { name: string; text: string; values: number[] } | null {
  const q = (name: string) => whole(url.searchParams.get(name));
  if (url.pathname === '/get' && q('id') !== null) return { name: 'get', text: GET, values: [q('id')!] };
  if (url.pathname === '/comments' && q('d') !== null) return { name: 'comments', text: COMMENTS, values: [q('d')!] };
  if (url.pathname === '/list' && q('first') !== null && q('offset') !== null) {
    const c = q('c');
    const full = url.searchParams.get('full') === '1';
    return {
      name: `list${full ? '_full' : ''}${c === null ? '' : '_category'}`,
      text: list(full, c !== null),
      values: c === null ? [q('first')!, q('offset')!] : [q('first')!, q('offset')!, c],
    };
  }
  return null;
}

const server = http.createServer(async (req, res) => {
  const s = statement(new URL(req.url ?? '/', 'http://floor'));
  if (!s) {
    res.writeHead(404).end();
    return;
  }
  try {
    const { rows } = await pool.query<{ body: string | null }>(s);
    const body = rows[0]?.body ?? '{"data":{"downloadById":null}}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().then(() => process.exit(0));
});
