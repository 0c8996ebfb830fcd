// Malformed bodies on both faces: every malformed JSON, form or multipart body answers 400 invalid_input naming the
// field "body", executes nothing and changes nothing, and no body of any shape ends the process. The regression
// cases are the safety review's (a part header without a colon after an empty map crashed the process), run
// in-process on both databases; the property-based fuzz mutates valid bodies and sends them to the service started
// as its own process (`npm start`'s code path), which must stay up and never answer 5xx. `FUZZ_RUNS` sets the number
// of bodies per kind (default 40; `npm run fuzz` sends 1,000).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStorage } from '../src/files/storage/local.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { serviceArgs } from './helpers/built.js';

const B = 'bodyfuzzboundary';
const CT = `multipart/form-data; boundary=${B}`;
const part = (headers: string, value: string) => `--${B}\r\n${headers}\r\n\r\n${value}\r\n`;
const field = (name: string, value: string) => part(`Content-Disposition: form-data; name="${name}"`, value);
const filePart = (name: string, value: string) =>
  part(`Content-Disposition: form-data; name="${name}"; filename="a.txt"\r\nContent-Type: text/plain`, value);
const createFile = (versionId: number) =>
  JSON.stringify({
    query: `mutation($f: Upload) { createFile(input: { versionId: ${versionId}, file: $f }) { file { fileId } } }`,
    variables: { f: null },
  });

/** The tails the safety review sent after a valid `operations` and an empty `map`; three ended the process. */
const REVIEW_TAILS: Record<string, string> = {
  'a part header without a colon': `--${B}\r\nno colon here\r\n\r\nxx`,
  'an empty header before a cut part': `--${B}\r\n\r\n\r\nContent-Disposition: form-data; name="0"; filename="a"\r\n\r\nabc`,
  'a 100 KB header line': `--${B}\r\nContent-Disposition: form-data; name="0"; filename="${'h'.repeat(100 * 1024)}"\r\n\r\nabc`,
  'a part cut before its headers end': `--${B}\r\nContent-Disposition: form-data; name="x"`,
  'no closing boundary': `--${B}\r\nContent-Disposition: form-data; name="x"\r\n\r\nvalue`,
};

async function post(url: string, key: string, contentType: string, body: string | Buffer) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType, 'Forum-Api-Key': key, 'Forum-Api-User': '1' },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

/** The error's code and field under either envelope (GraphQL `errors[].extensions`, REST `errors[]`). */
const errorOf = (body: any) => {
  const e = body?.errors?.[0];
  return { code: e?.extensions?.code ?? e?.code, field: e?.extensions?.params?.field ?? e?.params?.field };
};

forEachDatabase((kind) => {
  let t: TestApp;
  let versionId: number;
  beforeAll(async () => {
    t = await startTestApp(kind);
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

  const rowCount = async () => (await t.prisma.file.count()) + (await t.prisma.download.count());

  describe('malformed multipart bodies answer 400 invalid_input (field "body") and store nothing', () => {
    for (const [name, tail] of Object.entries(REVIEW_TAILS)) {
      it(`${name}: /graphql with an empty map, /graphql with the file in the map, and the REST files route`, async () => {
        const before = await rowCount();
        const head = field('operations', createFile(versionId));
        for (const body of [head + field('map', '{}') + tail, head + field('map', '{"0":["variables.f"]}') + tail]) {
          const g = await post(`${t.url}/graphql`, SUPER_KEY, CT, body);
          expect(g.status, JSON.stringify(g.body)).toBe(400);
          expect(errorOf(g.body)).toEqual({ code: 'invalid_input', field: 'body' });
          expect(g.body.data).toBeUndefined(); // refused before execution
        }
        const r = await post(`${t.url}/api/mc-dm-files/`, SUPER_KEY, CT, field('version_id', String(versionId)) + tail);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(errorOf(r.body)).toEqual({ code: 'invalid_input', field: 'body' });
        expect(await rowCount()).toBe(before);
      });
    }

    it('a file part cut short, or followed by a malformed part, stores nothing and leaves no temporary file', async () => {
      const before = await rowCount();
      const head = field('operations', createFile(versionId)) + field('map', '{"0":["variables.f"]}');
      const cut = `--${B}\r\nContent-Disposition: form-data; name="0"; filename="a.txt"\r\n\r\n${'x'.repeat(100_000)}`;
      const thenBad = `${filePart('0', 'abc')}--${B}\r\nno colon\r\n\r\n`;
      for (const tail of [cut, thenBad]) {
        const g = await post(`${t.url}/graphql`, SUPER_KEY, CT, head + tail);
        expect(g.status, JSON.stringify(g.body)).toBe(400);
        expect(errorOf(g.body)).toEqual({ code: 'invalid_input', field: 'body' });
        const r = await post(
          `${t.url}/api/mc-dm-files/`,
          SUPER_KEY,
          CT,
          field('version_id', String(versionId)) + tail.replace('name="0"', 'name="file"'),
        );
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        expect(errorOf(r.body)).toEqual({ code: 'invalid_input', field: 'body' });
      }
      expect(await rowCount()).toBe(before);
      await new Promise((r) => setTimeout(r, 100));
      expect(
        fs.readdirSync((t.app.services.storage as LocalStorage).tmpDir).filter((n) => n.endsWith('.part')),
      ).toEqual([]);
    });

    it('a well-formed upload still succeeds after all of them', async () => {
      const body =
        field('operations', createFile(versionId)) +
        field('map', '{"0":["variables.f"]}') +
        filePart('0', 'hello') +
        `--${B}--\r\n`;
      const g = await post(`${t.url}/graphql`, SUPER_KEY, CT, body);
      expect(g.status, JSON.stringify(g.body)).toBe(200);
      expect(g.body.data.createFile.file.fileId).toBeGreaterThan(0);
    });
  });

  describe('malformed JSON and form bodies answer 400 invalid_input (field "body")', () => {
    it('on /graphql and on a REST write', async () => {
      for (const body of [
        '{"query": "{ viewer { userId } }"',
        '{"query":',
        '\u0000\u0001',
        '[1,2',
        '{"query": "x"}}',
      ]) {
        const g = await post(`${t.url}/graphql`, SUPER_KEY, 'application/json', body);
        expect(g.status, `${body}: ${JSON.stringify(g.body)}`).toBe(400);
        expect(errorOf(g.body).code).toBe('invalid_input');
        const r = await post(`${t.url}/api/mc-dm-categories/`, SUPER_KEY, 'application/json', body);
        expect(r.status, `${body}: ${JSON.stringify(r.body)}`).toBe(400);
        expect(errorOf(r.body)).toEqual({ code: 'invalid_input', field: 'body' });
      }
    });
  });
});

// ── the fuzz, against the service as its own process ─────────────────────────────────────────────────────────

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

describe('fuzz: mutated bodies never end the process and never answer 5xx', () => {
  let child: ChildProcess;
  let base = '';
  let versionId = 0;
  let exited: string | null = null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bodies-'));

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
    child.on('exit', (code, signal) => {
      exited = `exited with code ${code}, signal ${signal}`;
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
      if (Date.now() > deadline || exited) throw new Error(`not listening: ${exited ?? ''} ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    base = JSON.parse(out.split('\n').find((l) => l.includes('"msg":"listening"'))!).url;
    const gql = (query: string, user = true) =>
      fetch(`${base}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'Forum-Api-Key': SUPER_KEY,
          ...(user ? { 'Forum-Api-User': '1' } : {}),
        },
        body: JSON.stringify({ query }),
      }).then((r) => r.json() as Promise<any>);
    await gql('mutation { createUser(input: { username: "owner", isAdmin: true }) { user { userId } } }', false);
    const c = await gql('mutation { createCategory(input: { title: "c" }) { category { categoryId } } }');
    const d = await gql(
      `mutation { createDownload(input: { categoryId: ${c.data.createCategory.category.categoryId}, title: "d" }) { download { currentVersion { versionId } } } }`,
    );
    versionId = d.data.createDownload.download.currentVersion.versionId;
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A valid body of each kind, as bytes, with the content type it is sent with. */
  const valid = () => ({
    graphqlMultipart: Buffer.from(
      field('operations', createFile(versionId)) +
        field('map', '{"0":["variables.f"]}') +
        filePart('0', 'hello world') +
        `--${B}--\r\n`,
    ),
    restMultipart: Buffer.from(
      `${field('version_id', String(versionId))}${filePart('file', 'hello world')}--${B}--\r\n`,
    ),
    json: Buffer.from(
      JSON.stringify({ query: 'query($d: Int!) { download(downloadId: $d) { title } }', variables: { d: 1 } }),
    ),
    form: Buffer.from('title=fuzzed&description=x'),
  });

  /** One mutation of a body: cut it, drop, repeat or replace a slice, insert random or structural bytes. */
  const mutation = fc.oneof(
    fc.record({ op: fc.constant('truncate'), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
    fc.record({
      op: fc.constant('insert'),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      bytes: fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 64 }).map((a) => Buffer.from(a)),
        fc
          .constantFrom(
            '\r\n',
            '\r\n\r\n',
            `--${B}`,
            `--${B}--`,
            '--',
            ':',
            '"',
            'Content-Disposition: form-data; name="0"\r\n\r\n',
            '\0',
            '{',
            ']',
          )
          .map((s) => Buffer.from(s)),
      ),
    }),
    fc.record({
      op: fc.constant('delete'),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      length: fc.integer({ min: 1, max: 40 }),
    }),
    fc.record({
      op: fc.constant('repeat'),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      length: fc.integer({ min: 1, max: 40 }),
      times: fc.integer({ min: 2, max: 50 }),
    }),
  );
  type Mutation = { op: string; at: number; bytes?: Buffer; length?: number; times?: number };
  const apply = (body: Buffer, m: Mutation): Buffer => {
    const i = Math.floor(m.at * body.length);
    switch (m.op) {
      case 'truncate':
        return body.subarray(0, i);
      case 'insert':
        return Buffer.concat([body.subarray(0, i), m.bytes!, body.subarray(i)]);
      case 'delete':
        return Buffer.concat([body.subarray(0, i), body.subarray(i + m.length!)]);
      default:
        return Buffer.concat([
          body.subarray(0, i),
          ...Array(m.times!).fill(body.subarray(i, i + m.length!)),
          body.subarray(i),
        ]);
    }
  };

  const targets = [
    { name: 'GraphQL multipart', kind: 'graphqlMultipart', method: 'POST', path: '/graphql', type: CT },
    {
      name: 'GraphQL multipart, boundary mutated',
      kind: 'graphqlMultipart',
      method: 'POST',
      path: '/graphql',
      type: 'boundary',
    },
    { name: 'REST multipart', kind: 'restMultipart', method: 'POST', path: '/api/mc-dm-files/', type: CT },
    { name: 'GraphQL JSON', kind: 'json', method: 'POST', path: '/graphql', type: 'application/json' },
    {
      name: 'REST form',
      kind: 'form',
      method: 'PUT',
      path: '/api/mc-dm-downloads/1/',
      type: 'application/x-www-form-urlencoded',
    },
  ] as const;

  for (const target of targets) {
    it(`${target.name}: ${RUNS} mutated bodies`, async () => {
      const answers = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(
          fc.array(mutation, { minLength: 1, maxLength: 4 }),
          fc.string({ maxLength: 80 }),
          async (mutations, boundary) => {
            const body = mutations.reduce<Buffer>((b, m) => apply(b, m as Mutation), valid()[target.kind]);
            const type = target.type === 'boundary' ? `multipart/form-data; boundary=${boundary}` : target.type;
            let status = 0;
            try {
              const res = await fetch(`${base}${target.path}`, {
                method: target.method,
                headers: { 'content-type': type, 'Forum-Api-Key': SUPER_KEY, 'Forum-Api-User': '1' },
                body: new Uint8Array(body),
                signal: AbortSignal.timeout(15_000),
              });
              status = res.status;
              await res.arrayBuffer();
            } catch (err) {
              // A content type fetch refuses to send (an invalid header value) is not a request at all.
              if ((err as Error).name === 'TypeError' && /header/i.test(String((err as Error).message))) return;
              throw err;
            }
            answers.set(status, (answers.get(status) ?? 0) + 1);
            expect(exited).toBeNull();
            expect(status, `${target.name}: ${JSON.stringify(mutations)}`).toBeLessThan(500);
          },
        ),
        { numRuns: RUNS, seed: 20261124, endOnFailure: true },
      );
      expect(exited).toBeNull();
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      console.log(
        `${target.name}: ${[...answers]
          .sort()
          .map(([s, n]) => `${n}× ${s}`)
          .join(', ')}`,
      );
    }, 120_000);
  }
});
