// The two clients under examples/, built and run as their READMEs say, against a running service: a Node client
// (graphql-request with the documents Code Generator's client preset types, also in persisted mode against a service
// that runs trusted documents only, loading the very file the preset wrote) and a browser page (Apollo Client 4,
// bundled by esbuild, served from another origin, in headless Chromium).
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config.js';
import { startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const NODE_EXAMPLE = path.join(ROOT, 'examples', 'node-graphql-request');
const BROWSER_EXAMPLE = path.join(ROOT, 'examples', 'browser-apollo');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
const CHROMIUM = '/usr/bin/chromium';

describe('examples/node-graphql-request (graphql-request + Code Generator client preset)', () => {
  let plain: TestApp;
  let trusted: TestApp | undefined;
  beforeAll(() => {
    // what its README says: generate, then type check with its own tsconfig (no change to it)
    execFileSync(bin('graphql-codegen'), ['--config', 'codegen.ts'], { cwd: NODE_EXAMPLE, stdio: 'pipe' });
    execFileSync(bin('tsc'), ['-p', '.'], { cwd: NODE_EXAMPLE, stdio: 'pipe' });
  }, 60_000);
  afterAll(async () => {
    await plain?.close();
    await trusted?.close();
  });

  // Asynchronous: the service answering it runs in this process.
  const runExample = async (url: string, env: Record<string, string> = {}) =>
    (
      await promisify(execFile)(bin('tsx'), ['src/main.ts'], {
        cwd: NODE_EXAMPLE,
        env: { ...process.env, BASE: url, KEY: SUPER_KEY, ...env },
        encoding: 'utf8',
      })
    ).stdout;

  it('compiles, runs, and reads back what it created', async () => {
    plain = await startTestApp('pglite');
    expect(JSON.parse(await runExample(plain.url))).toEqual({
      created: 'Example plain',
      listed: true,
      total: 1,
      byNode: 'Example plain',
    });
  });

  it("sends only the preset's sha256:<hex> ids, by POST and GET, to a service that trusts the preset's own file", async () => {
    trusted = await startTestApp('pglite', {
      graphql: {
        ...loadConfig({}).graphql,
        persistedDocumentsPath: path.join(NODE_EXAMPLE, 'src', 'gql', 'persisted-documents.json'),
        trustedDocumentsOnly: true,
      },
    });
    // the mutation by POST, the two queries by GET (documentId in the query string), each named by its sha256:<hex>
    expect(JSON.parse(await runExample(trusted.url, { PERSISTED: '1' }))).toMatchObject({
      created: 'Example persisted',
      listed: true,
      byNode: 'Example persisted',
      sent: [
        expect.stringMatching(/^POST sha256:[0-9a-f]{8}…$/),
        expect.stringMatching(/^GET sha256:[0-9a-f]{8}…$/),
        expect.stringMatching(/^GET sha256:[0-9a-f]{8}…$/),
      ],
    });
    // the same client sending its documents' text is refused there
    await expect(runExample(trusted.url)).rejects.toThrow(/trusted documents only/);
  });
});

describe.skipIf(!fs.existsSync(CHROMIUM))('examples/browser-apollo (Apollo Client 4 in a browser)', () => {
  let t: TestApp;
  let server: ChildProcess;
  let origin: string;
  let userKey: string;
  beforeAll(async () => {
    execFileSync(bin('tsc'), ['-p', '.'], { cwd: BROWSER_EXAMPLE, stdio: 'pipe' });
    execFileSync(
      bin('esbuild'),
      ['main.ts', '--bundle', '--format=esm', '--target=es2022', '--outfile=main.js', '--log-level=warning'],
      { cwd: BROWSER_EXAMPLE, stdio: 'pipe' },
    );
    server = spawn(process.execPath, ['serve.mjs'], { cwd: BROWSER_EXAMPLE, env: { ...process.env, PORT: '0' } });
    origin = await new Promise<string>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => resolve(chunk.toString().trim().replace(/\/$/, '')));
      server.on('exit', (code) => reject(new Error(`serve.mjs exited with ${code}`)));
    });
    t = await startTestApp('pglite', { corsOrigins: [origin], rateLimitPerMinute: 600 });
    await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Seen from a browser' } });
    // a user key: requests of super-user keys are not rate-limited, so they carry no RateLimit headers
    userKey = (await t.user('browser_reader')).key;
  }, 60_000);
  afterAll(async () => {
    server?.kill();
    await t?.close();
  });

  it('loads the categories across origins (CORS) and can read the rate-limit headers', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${origin}/#base=${encodeURIComponent(t.url)}&key=${userKey}`);
      await page.waitForSelector('#status[data-state]', { timeout: 20_000 });
      const status = await page.textContent('#status');
      expect(await page.getAttribute('#status', 'data-state'), status ?? '').toBe('ready');
      expect(status).toMatch(/^Signed in as browser_reader; 1 categories; RateLimit-Remaining: \d+$/);
      expect(await page.locator('#categories li').allTextContents()).toEqual(['Seen from a browser']);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
