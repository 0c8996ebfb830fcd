// Contract §9, "Logs": a client that goes away is logged at `info` at most, in one line, without a stack; `error` is
// for defects. Requests are aborted mid-flight (Node fetch with an AbortController) on a real server: while their
// operation waits on the database (a lock held by the test, PostgreSQL), and while an upload streams (both databases).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { startApp, type App } from '../src/app.js';
import { SUPER_KEY, forEachDatabaseSideBySide, migratedDatabase } from './helpers/app.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

forEachDatabaseSideBySide((kind) => {
  let app: App;
  let drop = async () => {};
  let url = '';
  const lines: Record<string, any>[] = [];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-gone-'));
  let downloadId: number;
  let versionId: number;
  let userKey: string;

  const gql = async (query: string, variables: Record<string, unknown> = {}, key = SUPER_KEY) =>
    (await (
      await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Forum-Api-Key': key },
        body: JSON.stringify({ query, variables }),
      })
    ).json()) as any;

  beforeAll(async () => {
    const fresh = await migratedDatabase(kind);
    if ('url' in fresh.target) url = fresh.target.url;
    drop = fresh.drop;
    const db = await openDatabase(fresh.target);
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    const log = pino({ level: 'debug' }, sink);
    const config = loadConfig(
      {},
      {
        port: 0,
        host: '127.0.0.1',
        dataDir,
        logLevel: 'debug',
        bootstrapKey: SUPER_KEY,
        rateLimitPerMinute: 0,
        readCacheMb: 0,
      },
    );
    app = await startApp(config, { db, log });
    config.baseUrl = app.url;
    const user = (
      await gql(
        `mutation { createUser(input: { username: "owner", isAdmin: false, isModerator: false, groups: [] }) { user { userId } } }`,
      )
    ).data.createUser.user.userId;
    userKey = (
      await gql(`mutation($u: Int) { createApiKey(input: { type: USER, scopes: ["all"], userId: $u }) { key } }`, {
        u: user,
      })
    ).data.createApiKey.key;
    const category = (await gql(`mutation { createCategory(input: { title: "Gone" }) { category { categoryId } } }`))
      .data.createCategory.category.categoryId;
    const made = await gql(
      `mutation($c: Int!) { createDownload(input: { categoryId: $c, title: "Gone" }) { download { downloadId currentVersionId } } }`,
      { c: category },
      userKey,
    );
    downloadId = made.data.createDownload.download.downloadId;
    versionId = made.data.createDownload.download.currentVersionId;
  });
  afterAll(async () => {
    await app?.close();
    await drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The log lines written from `from` on, once the server has had time to finish with the aborted request. */
  async function linesSince(from: number) {
    await sleep(700);
    return lines.slice(from);
  }

  function expectQuiet(logged: Record<string, any>[]) {
    const text = JSON.stringify(logged);
    expect(
      logged.filter((l) => l.level >= 40),
      text,
    ).toEqual([]); // no warn, error or fatal
    expect(text).not.toMatch(/DOMException|"stack"|\bat .*\(.*:\d+:\d+\)/);
    const gone = logged.filter((l) => /went away|aborted|disconnect/i.test(l.msg ?? ''));
    expect(gone.length, text).toBeLessThanOrEqual(1);
    for (const l of logged) expect(JSON.stringify(l).length, JSON.stringify(l)).toBeLessThan(600);
  }

  it.skipIf(kind !== 'postgres')('an operation whose client goes away while it waits on the database', async () => {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE comment IN ACCESS EXCLUSIVE MODE');
    try {
      for (const face of ['graphql', 'rest']) {
        const from = lines.length;
        const controller = new AbortController();
        const sent =
          face === 'graphql'
            ? fetch(`${app.url}/graphql`, {
                method: 'POST',
                signal: controller.signal,
                headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
                body: JSON.stringify({
                  query: 'query($d: Int!) { comments(downloadId: $d) { nodes { commentId } } }',
                  variables: { d: downloadId },
                }),
              })
            : fetch(`${app.url}/api/mc-dm-comments/?download_id=${downloadId}`, {
                signal: controller.signal,
                headers: { 'Forum-Api-Key': SUPER_KEY },
              });
        await sleep(300);
        controller.abort();
        await expect(sent).rejects.toThrow();
        expectQuiet(await linesSince(from));
      }
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('a file download whose client goes away mid-stream', async () => {
    const form = new FormData();
    form.append('version_id', String(versionId));
    form.append('file', new Blob([new Uint8Array(32 * 2 ** 20).fill(7)]), 'big.bin');
    const created = (await (
      await fetch(`${app.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': userKey }, body: form })
    ).json()) as any;
    const fileId = created.file.file_id;
    for (const where of [`/api/mc-dm-files/${fileId}/data/`]) {
      const from = lines.length;
      const controller = new AbortController();
      const res = await fetch(`${app.url}${where}`, {
        signal: controller.signal,
        headers: { 'Forum-Api-Key': userKey },
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.read().catch(() => {});
      expectQuiet(await linesSince(from));
    }
  });

  it('an upload whose client goes away mid-stream', async () => {
    for (const face of ['graphql', 'rest']) {
      const from = lines.length;
      const controller = new AbortController();
      let pushed = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (pushed === 0) {
            const head =
              face === 'graphql'
                ? `--B\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({ query: `mutation($f: Upload!) { createFile(input: { versionId: ${versionId}, file: $f }) { file { fileId } } }`, variables: { f: null } })}\r\n` +
                  `--B\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.f"]}\r\n--B\r\nContent-Disposition: form-data; name="0"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
                : `--B\r\nContent-Disposition: form-data; name="version_id"\r\n\r\n${versionId}\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
            c.enqueue(new TextEncoder().encode(head));
          }
          pushed++;
          await sleep(20);
          c.enqueue(new Uint8Array(64 * 1024));
        },
      });
      const sent = fetch(face === 'graphql' ? `${app.url}/graphql` : `${app.url}/api/mc-dm-files/`, {
        method: 'POST',
        signal: controller.signal,
        body,
        duplex: 'half',
        headers: {
          'content-type': 'multipart/form-data; boundary=B',
          'Forum-Api-Key': userKey,
          ...(face === 'graphql' ? { 'graphql-preflight': '1' } : {}),
        },
      } as RequestInit);
      await sleep(400);
      controller.abort();
      await expect(sent).rejects.toThrow();
      expectQuiet(await linesSince(from));
    }
  });
});
