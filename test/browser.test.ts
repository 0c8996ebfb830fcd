// The pages in a real browser (headless Chromium, the distribution's package): the REST reference renders every
// route from the bundled Swagger UI, and GraphiQL asks for the key, loads the schema once it has one, and keeps the
// key out of localStorage. Any Content-Security-Policy violation fails the test.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { Kind, type OperationDefinitionNode } from 'graphql';
import { openApiPath, summaryOf } from '../rest-adapter/openapi.js';
import { routes } from '../rest-adapter/routes.js';
import type { Route } from '../rest-adapter/route.js';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium)
  console.warn(
    `test/browser.test.ts skipped: ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it).`,
  );

// Each test loads pages whose scripts Chromium compiles on a CPU the other test files share: on a loaded 2-core machine
// the GraphiQL test took 21 s of the 30 s default (its own waits allow 30 s for one selector), so the bound is wider.
describe.skipIf(!haveChromium)('pages in headless Chromium', { timeout: 90_000 }, () => {
  let t: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    t = await startTestApp('pglite');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The name of the GraphQL operation a route runs (its summary is said from it unless the row writes its own). */
  const operationName = (r: Route): string =>
    r.document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)?.name
      ?.value ?? '';

  /**
   * A fresh page (its own storage) that records console errors and CSP violations, and, with `onPage`, whatever that
   * sets up before the page is loaded (listeners that must see its first requests).
   */
  async function open(
    path: string,
    onPage: (page: Page) => void = () => {},
  ): Promise<{ page: Page; problems: string[]; requests: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
    onPage(page);
    await page.goto(`${t.url}${path}`);
    return { page, problems, requests };
  }

  it('the REST reference lists every route of the table, with nothing loaded from elsewhere', async () => {
    const { page, problems, requests } = await open('/api/docs');
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
    const listed = await page.$$eval('.opblock', (els) =>
      els.map((e) => {
        const method = e.querySelector('.opblock-summary-method')?.textContent?.trim();
        const p =
          e.querySelector('.opblock-summary-path')?.getAttribute('data-path') ??
          e.querySelector('.opblock-summary-path')?.textContent;
        return `${method} ${p?.replace(/\u200b/g, '').trim()}`;
      }),
    );
    for (const r of routes)
      expect(listed, `${r.method} ${r.path}`).toContain(`${r.method} ${r.path.replace(/:([a-z_]+)/g, '{$1}')}`);
    expect(listed).toContain('GET /api/mc-dm-files/{file_id}/data/');
    // Each route shows its summary, which says what it does (from the route table), not its path again.
    const shown = await page.$$eval('.opblock', (els) =>
      els.map(
        (e) =>
          [
            `${e.querySelector('.opblock-summary-method')?.textContent?.trim()} ${e
              .querySelector('.opblock-summary-path')
              ?.getAttribute('data-path')
              ?.replace(/\u200b/g, '')}`,
            e.querySelector('.opblock-summary-description')?.textContent?.trim() ?? '',
          ] as const,
      ),
    );
    const summaries = new Map(shown);
    for (const r of routes) {
      const summary = summaries.get(`${r.method} ${openApiPath(r.path)}`);
      expect(summary, `${r.method} ${r.path}`).toBe(r.summary ?? summaryOf(operationName(r)));
      expect(summary).not.toContain('/api/');
    }
    expect(summaries.get('GET /api/mc-dm-downloads/{download_id}/')).toBe('Get a download');
    expect(summaries.get('GET /api/mc-dm-files/{file_id}/data/')).toBe("Download a file's bytes");
    expect(await page.textContent('body')).toContain('Forum-Api-Key');
    expect(requests.filter((u) => !u.startsWith(t.url) && !u.startsWith('data:'))).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('GraphiQL asks for the key, loads the schema once it is given, and keeps it for the tab only', async () => {
    const { page, problems, requests } = await open('/graphql');
    const input = page.locator('#api-key');
    await input.waitFor();
    expect(await input.getAttribute('placeholder')).toMatch(/Forum-Api-Key/);
    await page.waitForSelector('.graphiql-container', { timeout: 30_000 });

    // Without a key the schema cannot load: the Docs pane has no Query type.
    await page.click('[aria-label="Show Documentation Explorer"]');
    await page.waitForTimeout(500);
    expect(await page.locator('.graphiql-doc-explorer').textContent()).not.toMatch(/query\s*:\s*Query/);
    // … and the page says what to do (without sending a request bound to answer 401)
    await page.waitForFunction(
      () =>
        /Paste your API key in the bar above to load the schema/.test(
          (document.querySelector('.graphiql-response')?.textContent ?? '').replace(/\s+/g, ' '),
        ),
      null,
      { timeout: 10_000 },
    );

    await input.fill(SUPER_KEY);
    await page.click('#key-bar button[type="submit"]');
    // The schema is fetched again with the key: the Docs pane lists the root types, and Query's fields.
    await page.getByText('Query', { exact: true }).first().waitFor({ timeout: 20_000 });
    await page.getByText('Query', { exact: true }).first().click();
    await page.getByText('categories', { exact: true }).first().waitFor({ timeout: 10_000 });
    const docs = await page.locator('.graphiql-doc-explorer').textContent();
    expect(docs).toContain('viewer');
    expect(docs).toContain('downloads');

    // Running the default query sends the key.
    await page.click('.graphiql-execute-button');
    await page.waitForFunction(
      () => document.querySelector('.graphiql-response')?.textContent?.includes('isSuperKey'),
      null,
      { timeout: 20_000 },
    );
    const response = await page.locator('.graphiql-response').textContent();
    expect(response?.replace(/\s+/g, ' ')).toContain('"isSuperKey": true');

    const storage = await page.evaluate(() => ({
      local: Object.keys(localStorage)
        .map((k) => `${k}=${localStorage.getItem(k)}`)
        .join('\n'),
      session: Object.keys(sessionStorage)
        .map((k) => `${k}=${sessionStorage.getItem(k)}`)
        .join('\n'),
    }));
    expect(storage.local).not.toContain(SUPER_KEY);
    expect(storage.session).toContain(SUPER_KEY);

    // "Forget" drops the key from the tab and says so; the status no longer claims a key is in use.
    await page.click('#forget-key');
    expect(await page.inputValue('#api-key')).toBe('');
    expect(await page.textContent('#key-help')).toMatch(/^No key: paste one/);
    expect(await page.evaluate(() => Object.values(sessionStorage).join('\n'))).not.toContain(SUPER_KEY);
    // Running a query now sends no key: the service answers 401, and the status still says there is none (it does
    // not blame a key that was never sent).
    const sentKeys: (string | undefined)[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${t.url}/graphql`) && r.method() === 'POST') sentKeys.push(r.headers()['forum-api-key']);
    });
    await page.click('.graphiql-execute-button');
    await page.waitForFunction(
      () => document.querySelector('.graphiql-response')?.textContent?.includes('no_api_key_in_request'),
      null,
      { timeout: 20_000 },
    );
    expect(sentKeys).toEqual([undefined]);
    expect(await page.textContent('#key-help')).toMatch(/^No key: paste one/);
    // … and the key given again is used again.
    await input.fill(SUPER_KEY);
    await page.click('#key-bar button[type="submit"]');
    expect(await page.textContent('#key-help')).toMatch(/^Using the key from this tab/);

    // A reload in the same tab keeps the key; the schema loads at once.
    await page.reload();
    await page.waitForSelector('.graphiql-container', { timeout: 30_000 });
    expect(await page.inputValue('#api-key')).toBe(SUPER_KEY);

    // A new tab (a new browsing context) does not have it.
    const other = await open('/graphql');
    await other.page.locator('#api-key').waitFor();
    expect(await other.page.inputValue('#api-key')).toBe('');
    await other.page.context().close();

    expect(requests.filter((u) => !u.startsWith(t.url) && !u.startsWith('data:') && !u.startsWith('blob:'))).toEqual(
      [],
    );
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("a key typed into the Headers tab is used, becomes the tab's key, and is never written to localStorage", async () => {
    const readOnly = await t.key('GUEST', ['mc_dm_category:read']);
    const { page, problems } = await open('/graphql');
    await page.waitForSelector('.graphiql-container', { timeout: 30_000 });
    await page.fill('#api-key', SUPER_KEY);
    await page.click('#key-bar button[type="submit"]');
    await page.getByText('Headers', { exact: true }).click();
    const headersEditor = page.locator('.graphiql-editor-tool .monaco-editor').last();
    await headersEditor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ 'Forum-Api-Key': readOnly }));
    await page.click('.graphiql-execute-button');
    await page.waitForFunction(
      () => /mc_dm_category:read/.test(document.querySelector('.graphiql-response')?.textContent ?? ''),
      null,
      { timeout: 20_000 },
    );
    const response = (await page.locator('.graphiql-response').textContent())!.replace(/\s+/g, ' ');
    expect(response).toContain('"isSuperKey": false');
    expect(response).not.toContain('mc_dm_download:read');
    await page.waitForFunction((k) => (document.querySelector('#api-key') as HTMLInputElement).value === k, readOnly, {
      timeout: 5_000,
    });
    const local = await page.evaluate(() => JSON.stringify(Object.entries(localStorage)));
    expect(local).not.toContain(readOnly);
    expect(local).not.toContain(SUPER_KEY);
    expect(await page.evaluate(() => sessionStorage.getItem('dcs.forumApiKey'))).toBe(readOnly);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it("GraphiQL's and the reference's files arrive compressed, by versioned addresses the browser keeps for a year", async () => {
    for (const [path, ready] of [
      ['/graphql', '.graphiql-container'],
      ['/api/docs', '.opblock-summary-path'],
    ] as const) {
      const files: { url: string; status: number; headers: Record<string, string> }[] = [];
      // Listening from the first request on: one load of each page, not a load and a reload.
      const { page, problems } = await open(path, (page) =>
        page.on('response', async (r) => {
          const url = new URL(r.url());
          if (url.origin === t.url && /\.(js|css|ico)$/.test(url.pathname))
            files.push({ url: url.pathname + url.search, status: r.status(), headers: await r.allHeaders() });
        }),
      );
      await page.waitForSelector(ready, { timeout: 30_000 });
      if (path === '/graphql') {
        // Monaco's workers start with the editors: GraphiQL's largest files after its bundle
        await page.waitForFunction(
          () => performance.getEntriesByType('resource').some((e) => /worker-/.test(e.name)),
          null,
          {
            timeout: 20_000,
          },
        );
        await page.waitForTimeout(500);
      }
      expect(files.length, path).toBeGreaterThanOrEqual(path === '/graphql' ? 5 : 4);
      for (const f of files) {
        expect(f.url, path).toMatch(/\?v=[\w.-]+$/);
        expect([200, 304], f.url).toContain(f.status);
        expect(f.headers['cache-control'], f.url).toBe('public, max-age=31536000, immutable');
        if (/graphiql\.js|worker-|swagger-ui-bundle/.test(f.url))
          expect(f.headers['content-encoding'], f.url).toBe('br');
      }
      if (path === '/graphql') expect(files.map((f) => f.url).join(' ')).toMatch(/worker-\w+\.js\?v=/);
      expect(problems).toEqual([]);
      await page.context().close();
    }
  });

  it('the landing page renders its links', async () => {
    const { page, problems } = await open('/');
    const links = await page.$$eval('a', (as) => as.map((a) => a.getAttribute('href')));
    expect(links).toEqual(
      expect.arrayContaining(['/graphql', '/api/docs', '/api/openapi.json', '/healthz', '/readyz']),
    );
    expect(await page.evaluate(() => getComputedStyle(document.querySelector('.cards')!).display)).toBe('grid'); // site.css applied
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
