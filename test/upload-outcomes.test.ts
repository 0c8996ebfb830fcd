// No temporary or partial upload file outlives its request by 5 s, whatever the outcome, on both faces: success, a
// refusal after the bytes arrived, an upload over MAX_UPLOAD_BYTES, an operation past its deadline, a client that
// goes away mid-upload. (A crash followed by a restart: the start-up sweep, test/hardening.test.ts "temporary
// files" and test/temp-files.test.ts.) The deadline measures the operation's execution, not the upload's transfer:
// an upload sent more slowly than GRAPHQL_TIMEOUT_MS succeeds.
import http from 'node:http';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabaseSideBySide, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { loadConfig } from '../src/config.js';
import type { LocalStorage } from '../src/files/storage/local.js';

const B = 'outcomeboundary';
const CT = `multipart/form-data; boundary=${B}`;
const field = (name: string, value: string) =>
  `--${B}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const fileHead = (name: string, filename = 'a.bin') =>
  `--${B}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
const END = `\r\n--${B}--\r\n`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Face = 'graphql' | 'rest';
/** The parts before the file's bytes, for either face. */
function head(face: Face, versionId: number): string {
  if (face === 'rest') return field('version_id', String(versionId)) + fileHead('file');
  const ops = JSON.stringify({
    query: `mutation($f: Upload) { createFile(input: { versionId: ${versionId}, file: $f }) { file { fileId } } }`,
    variables: { f: null },
  });
  return field('operations', ops) + field('map', '{"0":["variables.f"]}') + fileHead('0');
}
const pathOf = (face: Face) => (face === 'rest' ? '/api/mc-dm-files/' : '/graphql');

/**
 * Sends `head`, then `size` bytes in `chunks` pieces `gapMs` apart, then the end (unless `cutAfter` chunks: then the
 * socket is destroyed). Resolves with the answer, or with status 0 when there was none.
 */
function upload(
  url: string,
  face: Face,
  versionId: number,
  opts: { size: number; chunks?: number; gapMs?: number; cutAfter?: number },
) {
  const chunks = opts.chunks ?? 1;
  return new Promise<{ status: number; body: any }>((resolve) => {
    const req = http.request(
      `${url}${pathOf(face)}`,
      {
        method: 'POST',
        agent: false,
        headers: { 'Forum-Api-Key': SUPER_KEY, 'Forum-Api-User': '1', 'content-type': CT },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => {
          let body: any = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* text */
          }
          resolve({ status: res.statusCode!, body });
        });
        res.on('error', () => resolve({ status: 0, body: null }));
      },
    );
    req.on('error', () => resolve({ status: 0, body: null }));
    void (async () => {
      req.write(head(face, versionId));
      const piece = Buffer.alloc(Math.ceil(opts.size / chunks), 0x61);
      for (let i = 0; i < chunks; i++) {
        if (opts.cutAfter !== undefined && i === opts.cutAfter) {
          await sleep(100);
          req.destroy();
          return;
        }
        req.write(piece);
        if (opts.gapMs) await sleep(opts.gapMs);
      }
      req.end(END);
    })();
  });
}

forEachDatabaseSideBySide((kind) => {
  let t: TestApp;
  let versionId: number;
  const parts = () =>
    fs.readdirSync((t.app.services.storage as LocalStorage).tmpDir).filter((n) => n.endsWith('.part'));
  /** No .part file within 5 s of the request's end. */
  const noPartWithin5s = async () => {
    const t0 = Date.now();
    while (parts().length && Date.now() - t0 < 5000) await sleep(50);
    expect(parts()).toEqual([]);
  };

  beforeAll(async () => {
    t = await startTestApp(kind, {
      maxUploadBytes: 4 * 1024 * 1024,
      graphql: { ...loadConfig({}).graphql, timeoutMs: 700 },
    });
    await t.user('owner', { isAdmin: true });
    const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category.category_id;
    versionId = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        headers: { 'Forum-Api-User': '1' },
        form: { category_id: c, title: 'd' },
      })
    ).body.download.current_version_id;
  });
  afterAll(() => t?.close());

  for (const face of ['graphql', 'rest'] as const) {
    describe(`${face}: no temporary file outlives its request`, () => {
      it('success, sent more slowly than the operation deadline (700 ms): stored, not timed out', async () => {
        const r = await upload(t.url, face, versionId, { size: 64 * 1024, chunks: 8, gapMs: 200 });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(face === 'rest' ? r.body.file.file_id : r.body.data.createFile.file.fileId).toBeGreaterThan(0);
        await noPartWithin5s();
      });

      it('refused after the bytes arrived (an unknown version)', async () => {
        const r = await upload(t.url, face, 999_999, { size: 32 * 1024 });
        expect(JSON.stringify(r.body)).toContain('version_not_found');
        await noPartWithin5s();
      });

      it('over MAX_UPLOAD_BYTES', async () => {
        const r = await upload(t.url, face, versionId, { size: 6 * 1024 * 1024, chunks: 12 });
        if (r.status) expect(JSON.stringify(r.body)).toContain('upload_exceeds_php_limit');
        await noPartWithin5s();
      });

      it('the client goes away mid-upload', async () => {
        const r = await upload(t.url, face, versionId, { size: 1024 * 1024, chunks: 8, gapMs: 50, cutAfter: 4 });
        expect(r.status).toBe(0);
        await noPartWithin5s();
      });
    });
  }

  it('an operation past its deadline (set to 1 ms, so every operation passes it) leaves no temporary file on either face', async () => {
    const limits = t.config.graphql; // read by both faces on every operation
    const before = limits.timeoutMs;
    limits.timeoutMs = 1;
    try {
      for (const face of ['graphql', 'rest'] as const) {
        const r = await upload(t.url, face, versionId, { size: 256 * 1024, chunks: 4 });
        expect(r.status, JSON.stringify(r.body)).toBe(503);
        expect(JSON.stringify(r.body)).toContain('operation_timeout');
        await noPartWithin5s();
      }
    } finally {
      limits.timeoutMs = before;
    }
  });
});
