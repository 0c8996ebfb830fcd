// Refusals reach the sender: a request refused before its body is read (a missing scope, an unknown key) is answered
// at once and the rest of its body read and dropped, up to REFUSED_BODY_DRAIN_BYTES, so that Node's fetch (undici),
// which sends the whole body before reading, gets the answer instead of EPIPE or a reset. Against the service started
// as its own process (in-process, the two ends of the socket share one event loop and the race rarely shows).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPER_KEY, startTestApp } from './helpers/app.js';
import { serviceArgs } from './helpers/built.js';

const B = 'refusalboundary';
const CT = `multipart/form-data; boundary=${B}`;
const MiB = 1024 * 1024;
const UNKNOWN_KEY = 'dm_unknown_key_00000000000000000000000000000000';

/** A GraphQL multipart upload of `size` bytes. */
const graphqlUpload = (size: number) =>
  new Uint8Array(
    Buffer.concat([
      Buffer.from(
        `--${B}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({ query: 'mutation($f: Upload) { createFile(input: { versionId: 1, file: $f }) { file { fileId } } }', variables: { f: null } })}\r\n` +
          `--${B}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.f"]}\r\n--${B}\r\nContent-Disposition: form-data; name="0"; filename="a.bin"\r\n\r\n`,
      ),
      Buffer.alloc(size, 0x61),
      Buffer.from(`\r\n--${B}--\r\n`),
    ]),
  );
/** A REST files-route body: a file of `size` bytes, or (`fields`) plain form fields of 1 MiB each. */
const restBody = (size: number, fields = false) =>
  new Uint8Array(
    Buffer.concat(
      fields
        ? [
            ...Array.from({ length: size / MiB }, (_, i) =>
              Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n${'a'.repeat(MiB)}\r\n`),
            ),
            Buffer.from(`--${B}--\r\n`),
          ]
        : [
            Buffer.from(
              `--${B}\r\nContent-Disposition: form-data; name="version_id"\r\n\r\n1\r\n--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n`,
            ),
            Buffer.alloc(size, 0x61),
            Buffer.from(`\r\n--${B}--\r\n`),
          ],
    ),
  );

async function send(url: string, key: string, body: Uint8Array<ArrayBuffer>) {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': CT, 'Forum-Api-Key': key },
      body,
      signal: AbortSignal.timeout(20_000),
    });
    const json = (await res.json()) as any;
    return { status: res.status, code: json.errors?.[0]?.extensions?.code ?? json.errors?.[0]?.code };
  } catch (err) {
    return { status: 0, code: String((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name) };
  }
}

describe('refusals reach clients that send their whole body first (Node fetch), against the service as a process', () => {
  let child: ChildProcess;
  let base = '';
  let readOnly = '';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-refusals-'));

  beforeAll(async () => {
    child = spawn(process.execPath, serviceArgs(), {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: {
        ...process.env,
        DATA_DIR: dir,
        PORT: '0',
        LOG_LEVEL: 'info',
        DM_BOOTSTRAP_KEY: SUPER_KEY,
        RATE_LIMIT_PER_MINUTE: '0',
        DATABASE_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => {
      out += c;
    });
    child.stderr!.on('data', (c) => {
      out += c;
    });
    const deadline = Date.now() + 60_000;
    while (!/"msg":"listening"/.test(out)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`not listening: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    base = JSON.parse(out.split('\n').find((l) => l.includes('"msg":"listening"'))!).url;
    const r = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
      body: JSON.stringify({
        query: 'mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_download:read"] }) { key } }',
      }),
    });
    readOnly = ((await r.json()) as any).data.createApiKey.key;
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a read-only key uploading 1, 4 and 6 MiB to /graphql gets its 403 every time (it saw EPIPE before)', async () => {
    for (const size of [1, 4, 4, 4, 4, 6, 6]) {
      expect(await send(`${base}/graphql`, readOnly, graphqlUpload(size * MiB)), `${size} MiB`).toEqual({
        status: 403,
        code: 'api_scope_missing',
      });
    }
  }, 60_000);

  it('the REST files route: a 4 MiB file and 12 MiB of plain form fields from a read-only key get their 403', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await send(`${base}/api/mc-dm-files/`, readOnly, restBody(4 * MiB))).toEqual({
        status: 403,
        code: 'api_scope_missing',
      });
      expect(await send(`${base}/api/mc-dm-files/`, readOnly, restBody(12 * MiB, true))).toEqual({
        status: 403,
        code: 'api_scope_missing',
      });
    }
  }, 60_000);

  it('an unknown key sending 4 MiB gets its 401 on both faces', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await send(`${base}/graphql`, UNKNOWN_KEY, graphqlUpload(4 * MiB))).toEqual({
        status: 401,
        code: 'api_key_not_found',
      });
      expect(await send(`${base}/api/mc-dm-files/`, UNKNOWN_KEY, restBody(4 * MiB))).toEqual({
        status: 401,
        code: 'api_key_not_found',
      });
    }
  }, 60_000);

  it('after a refusal the connection is reused: the next request on the same client is answered', async () => {
    expect((await send(`${base}/graphql`, readOnly, graphqlUpload(2 * MiB))).status).toBe(403);
    const next = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': readOnly },
      body: JSON.stringify({ query: '{ viewer { userId } }' }),
    });
    expect(next.status).toBe(200);
  });
});

describe('past REFUSED_BODY_DRAIN_BYTES the connection is closed, not held', () => {
  it('1 MiB of drain and an 8 MiB body: the request settles (answer or reset) within seconds, and the service answers others', async () => {
    const t = await startTestApp('pglite', { refusedBodyDrainBytes: MiB });
    try {
      const ro = await t.key('GUEST', ['mc_dm_download:read']);
      for (const url of [`${t.url}/graphql`, `${t.url}/api/mc-dm-files/`]) {
        const t0 = Date.now();
        const r = await send(url, ro, url.endsWith('/graphql') ? graphqlUpload(8 * MiB) : restBody(8 * MiB));
        expect(Date.now() - t0).toBeLessThan(5000);
        expect([403, 0]).toContain(r.status);
      }
      expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
