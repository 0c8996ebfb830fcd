// Serves this folder on http://127.0.0.1:8080 (PORT to change it): the page and its bundled script, nothing else.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const dir = path.dirname(new URL(import.meta.url).pathname);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };
const server = http.createServer((req, res) => {
  const name = new URL(req.url, 'http://x').pathname === '/' ? 'index.html' : new URL(req.url, 'http://x').pathname.slice(1);
  const file = path.join(dir, path.basename(name));
  const type = types[path.extname(file)];
  if (!type || !fs.existsSync(file)) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': type }).end(fs.readFileSync(file));
});
server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/`);
});
