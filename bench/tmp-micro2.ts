import { PGlite } from '@electric-sql/pglite';
const lite = new PGlite(); await lite.waitReady;
await lite.exec(`CREATE TABLE d (id int primary key, title text, a int, b int, c timestamptz default now(), e text, f float8, g bool);
INSERT INTO d SELECT i, 'title '||i, i, i, now(), 'x', 1.5, true FROM generate_series(1,50000) i; ANALYZE d;`);
async function time(name: string, n: number, fn: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 100; i++) await fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  console.log(name.padEnd(40), ((performance.now() - t0) / n * 1000).toFixed(0), 'µs');
}
await time('query params', 3000, (i) => lite.query('SELECT * FROM d WHERE id = $1', [i % 50000 + 1]));
await time('query params rowMode array', 3000, (i) => lite.query('SELECT * FROM d WHERE id = $1', [i % 50000 + 1], { rowMode: 'array' }));
await time('query params paramTypes', 3000, (i) => lite.query('SELECT * FROM d WHERE id = $1', [i % 50000 + 1], { paramTypes: [23] }));
await time('exec literal', 3000, (i) => lite.exec(`SELECT * FROM d WHERE id = ${i % 50000 + 1}`));
await time('query no params', 3000, (i) => lite.query(`SELECT * FROM d WHERE id = ${i % 50000 + 1}`));
await time('query SELECT 1', 3000, () => lite.query(`SELECT 1`));
await time('exec SELECT 1', 3000, () => lite.exec(`SELECT 1`));
await time('exec 20 rows', 1000, (i) => lite.exec(`SELECT * FROM d WHERE id > ${i} ORDER BY id LIMIT 20`));
await time('query 20 rows', 1000, (i) => lite.query(`SELECT * FROM d WHERE id > $1 ORDER BY id LIMIT 20`, [i]));
await time('query 100 rows', 1000, (i) => lite.query(`SELECT * FROM d WHERE id > $1 ORDER BY id LIMIT 100`, [i]));
await time('exec 100 rows json', 1000, (i) => lite.exec(`SELECT json_agg(d) FROM (SELECT * FROM d WHERE id > ${i} ORDER BY id LIMIT 100) d`));
