// The README as a tested walkthrough: every ```sh / ```bash block of README.md runs, in the order written, in ONE
// bash session (`set -euo pipefail`, so variables, functions and files made by earlier blocks carry over), in a
// fresh temporary folder, against a service this file starts on a fresh data directory (and, with TEST_DATABASE_URL, once
// more on a fresh PostgreSQL database). Each block must exit 0, and each command's output must match what the README
// shows for it.
//
// Conventions (the README explains them to its readers too):
// - Expected output: inside a block, lines starting with `# → ` show what the commands above them (since the previous
//   such lines, or the start of the block) print, stdout and stderr together. `…` stands for any text (something
//   that differs from run to run, such as keys, dates and hashes, or something left out).
// - Skipped blocks: a block right after the line `<!-- not run by test/readme.test.ts: <reason> -->` is not run
//   (set-up commands, a second instance, the service stopped); the reason is required.
// - Substitutions, the only ones: the line `export KEY=dm_…` gets the key the server printed at its first start,
//   and the line `export BASE=http://127.0.0.1:3000` the address of the server started here (with `BASE_URL` set to
//   `http://localhost:3000`, its default for that port, so the URLs in answers are the README's). That line is the
//   only command that names the address: every other one uses $BASE (checked below), so a reader whose service
//   listens elsewhere changes one line.
// - The session starts in the repository's directory, as a reader's terminal does; the README's first block moves
//   into a fresh `mktemp -d` folder (TMPDIR points into this run's temporary directory), so the walkthrough writes
//   nothing into the checkout: `git status` is the same after it as before.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, freshPostgres, type DbKind } from './helpers/app.js';
import { serviceArgs } from './helpers/built.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const KEY_LINE = /^export KEY=dm_…(?=\s|$)/m;
const BASE_LINE = /^export BASE=http:\/\/127\.0\.0\.1:3000(?=\s|$)/m;
const SKIP = /^<!-- not run by test\/readme\.test\.ts: (.*?) -->$/;
const EXPECTED = /^\s*# →(?: (.*))?$/;

interface Segment {
  line: number;
  code: string;
  expected?: string[];
}
interface Block {
  index: number;
  line: number;
  lang: string;
  skip?: string;
  segments: Segment[];
}

/** The shell blocks of a Markdown text, each split into segments that end where the README shows their output. */
function shellBlocks(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)/.exec(lines[i]!);
    if (!fence) continue;
    const lang = fence[1]!;
    const start = i;
    const body: { line: number; text: string }[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) {
      // an opening fence inside a block means the block above was never closed
      if (/^```\S/.test(lines[i]!))
        throw new Error(`README.md:${i + 1}: a code block starts inside the one opened at line ${start + 1}`);
      body.push({ line: i + 1, text: lines[i]! });
    }
    if (lang !== 'sh' && lang !== 'bash') continue;
    const skip = SKIP.exec(
      lines
        .slice(0, start)
        .reverse()
        .find((l) => l.trim() !== '')
        ?.trim() ?? '',
    )?.[1];
    const segments: Segment[] = [];
    let current: Segment | undefined;
    for (const { line, text: l } of body) {
      const out = EXPECTED.exec(l);
      if (out) {
        if (!current) throw new Error(`README.md:${line}: output shown before any command`);
        current.expected ??= [];
        current.expected.push(out[1] ?? '');
      } else {
        if (!current || current.expected) {
          current = { line, code: '' };
          segments.push(current);
        }
        current.code += `${l}\n`;
      }
    }
    blocks.push({ index: blocks.length, line: start + 1, lang, skip, segments });
  }
  return blocks;
}

/** Whether `actual` is what `expected` shows: line for line (trailing blanks aside), `…` matching any text. */
function matchesShown(actual: string, expected: string[]): boolean {
  const tidy = (s: string) =>
    s
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .replace(/^\n+|\n+$/g, '');
  const inline = (line: string) =>
    line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*?');
  const lines = tidy(expected.join('\n')).split('\n');
  // a line that is only `…` stands for any number of lines, none included
  const pattern = lines
    .map((line, i) => {
      if (line === '…') return i === 0 ? '(?:[\\s\\S]*?\\n)?' : '(?:\\n[\\s\\S]*?)?';
      return (i === 0 || (i === 1 && lines[0] === '…') ? '' : '\\n') + inline(line);
    })
    .join('');
  return new RegExp(`^${pattern}$`).test(tidy(actual));
}

interface Server {
  url: string;
  key: string;
  stop(): Promise<void>;
}

/**
 * Starts the service as `npm start` does, on a fresh data directory and a free port, and resolves once it listens and
 * has printed its bootstrap key. The one place that knows how the service is started.
 */
function startServer(dataDir: string, databaseUrl?: string): Promise<Server> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    BASE_URL: 'http://localhost:3000',
  };
  // NODE_ENV=test (set by vitest) would make GraphQL Yoga ping event streams every 300 ms instead of every 12 s
  for (const name of [
    'NODE_ENV',
    'DATABASE_URL',
    'DM_BOOTSTRAP_KEY',
    'STORAGE',
    'REDIS_URL',
    'METRICS',
    'LOG_LEVEL',
    'GRAPHQL_PERSISTED_DOCUMENTS',
    'GRAPHQL_TRUSTED_DOCUMENTS_ONLY',
  ])
    delete env[name];
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const child: ChildProcess = spawn(process.execPath, serviceArgs(), {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
  };
  return new Promise((resolve, reject) => {
    let output = '';
    let url: string | undefined;
    let key: string | undefined;
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 100_000) output = output.slice(-50_000);
      key ??= /^Bootstrap super-user API key: (dm_\S+)$/m.exec(output)?.[1];
      url ??= /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*"msg":"listening"/.exec(output)?.[1];
      if (url && key) resolve({ url, key, stop });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`the service exited before it was ready:\n${output}`)));
  });
}

/** The bash script: every runnable segment, each after a marker line naming it, each block followed by its end marker. */
/** `git status --porcelain` of the checkout (untracked files included). */
function gitStatus(): string {
  return execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' });
}

function script(blocks: Block[], server: Server): string {
  const parts = ['set -euo pipefail', 'exec 2>&1', `cd ${JSON.stringify(ROOT)}`];
  for (const block of blocks) {
    if (block.skip !== undefined) continue;
    block.segments.forEach((segment, s) => {
      const code = segment.code
        .replace(KEY_LINE, `export KEY=${server.key}`)
        .replace(BASE_LINE, `export BASE=${server.url}`);
      parts.push(`printf '\\n@@readme-segment ${block.index} ${s} %s@@\\n' "$EPOCHREALTIME"`, code);
    });
    parts.push(`printf '\\n@@readme-block-end ${block.index} %s@@\\n' "$EPOCHREALTIME"`);
  }
  return `${parts.join('\n')}\n`;
}

interface Run {
  /** Output of each segment run, by "block segment". */
  outputs: Map<string, string>;
  /** Seconds each segment took, by "block segment". */
  seconds: Map<string, number>;
  ended: Set<number>;
  status: number | null;
}

function runScript(text: string, temp: string, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    const file = path.join(temp, 'readme-walkthrough.sh');
    fs.writeFileSync(file, text);
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp };
    for (const name of ['DATABASE_URL', 'DATA_DIR', 'PORT', 'KEY', 'API', 'BASE', 'DCS']) delete env[name];
    const child = spawn('bash', [file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      // background jobs a block left running (none should) go with the group
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      const outputs = new Map<string, string>();
      const seconds = new Map<string, number>();
      const ended = new Set<number>();
      // the time is $EPOCHREALTIME (bash 5; empty before, which only loses the timings)
      const marker = /\n?@@readme-(?:segment (\d+) (\d+)|block-end (\d+)) ([\d.]*)@@\n/g;
      let last: { id: string; at: number } | undefined;
      let from = 0;
      const close = (to: number, at: number) => {
        if (!last) return;
        outputs.set(last.id, output.slice(from, to));
        seconds.set(last.id, at - last.at);
      };
      for (let m = marker.exec(output); m; m = marker.exec(output)) {
        const at = Number(m[4]);
        close(m.index, at);
        if (m[3] !== undefined) {
          ended.add(Number(m[3]));
          last = undefined;
        } else last = { id: `${m[1]} ${m[2]}`, at };
        from = m.index + m[0].length;
      }
      close(output.length, Date.now() / 1000);
      resolve({ outputs, seconds, ended, status });
    });
  });
}

const blocks = shellBlocks(README);

describe('README.md conventions', () => {
  it('has runnable shell blocks, one key placeholder, and reasons for the blocks it skips', () => {
    expect(blocks.filter((b) => b.skip === undefined).length).toBeGreaterThan(10);
    expect(README.match(new RegExp(KEY_LINE.source, 'gm'))).toHaveLength(1);
    for (const b of blocks) if (b.skip !== undefined) expect(b.skip.trim(), `README.md:${b.line}`).not.toBe('');
  });

  it("names the service's address once, in `export BASE=`; every other command uses $BASE", () => {
    expect(README.match(new RegExp(BASE_LINE.source, 'gm'))).toHaveLength(1);
    // every line of every code block, run or not (output shown and comments aside), and commands written inline
    const code: { at: string; text: string }[] = [];
    let fenced = false;
    README.split('\n').forEach((line, i) => {
      if (/^```/.test(line)) fenced = !fenced;
      else if (fenced && !EXPECTED.test(line))
        code.push({ at: `README.md:${i + 1}`, text: line.replace(/(^|\s)(#|\/\/).*$/, '') });
    });
    const inline = [...README.matchAll(/`([^`\n]+)`/g)]
      .map((m) => m[1]!)
      .filter((c) => /^(curl|npm|npx|node|wget)\s|--url\b|HttpLink|fetch\(/.test(c))
      .map((text) => ({ at: 'README.md (inline)', text }));
    const naming = [...code, ...inline].filter((c) => /(127\.0\.0\.1|localhost):3000\b/.test(c.text));
    expect(naming.map((c) => `${c.at}: ${c.text.trim()}`)).toEqual([
      expect.stringMatching(/^README\.md:\d+: export BASE=http:\/\/127\.0\.0\.1:3000$/),
    ]);
  });

  it('links only to files inside the repository that exist, and to headings they have', () => {
    // GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens
    const anchors = (markdown: string) =>
      new Set(
        [...markdown.matchAll(/^#+ (.*)$/gm)].map((m) =>
          m[1]!
            .trim()
            .toLowerCase()
            .replace(/[^\w\- ]/g, '')
            .replace(/ /g, '-'),
        ),
      );
    for (const [, file, anchor] of README.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
      if (/^[a-z]+:/.test(file!)) continue;
      const target = file ? path.join(ROOT, file) : path.join(ROOT, 'README.md');
      expect(fs.existsSync(target), file).toBe(true);
      if (anchor) expect(anchors(fs.readFileSync(target, 'utf8')).has(anchor), `${file}#${anchor}`).toBe(true);
    }
  });

  it('matches output line for line, with … for any text', () => {
    expect(matchesShown('{"a":1,"b":"x"}\n', ['{"a":1,…}'])).toBe(true);
    expect(matchesShown('one\ntwo\nthree', ['one', '…', 'three'])).toBe(true);
    expect(matchesShown('{"a":2}', ['{"a":1}'])).toBe(false);
    expect(matchesShown('{"a":1}\nextra', ['{"a":1}'])).toBe(false);
    expect(matchesShown('a\nb', ['…', 'a', '…', 'b', '…'])).toBe(true);
    expect(matchesShown('x\na\ny\nz\nb\nw', ['…', 'a', '…', 'b', '…'])).toBe(true);
    expect(matchesShown('a\nb', ['a', '…', 'c'])).toBe(false);
  });
});

forEachDatabase((kind: DbKind) =>
  describe('README.md walkthrough, in order, on a fresh server', () => {
    let server: Server | undefined;
    let run: Run;
    let temp: string | undefined;
    let statusBefore = '';
    let database: Awaited<ReturnType<typeof freshPostgres>> | undefined;

    beforeAll(async () => {
      temp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-readme-'));
      statusBefore = gitStatus();
      if (kind === 'postgres') database = await freshPostgres();
      const started = Date.now();
      server = await startServer(path.join(temp, 'data'), database?.url);
      const startup = ((Date.now() - started) / 1000).toFixed(1);
      run = await runScript(script(blocks, server), temp, 100_000);
      const line = (id: string) => {
        const [b, s] = id.split(' ').map(Number);
        return blocks[b!]!.segments[s!]!.line;
      };
      const slowest = [...run.seconds]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([id, t]) => `README.md:${line(id)} ${t.toFixed(1)} s`);
      const total = [...run.seconds.values()].reduce((a, b) => a + b, 0);
      console.log(
        `README walkthrough (${kind}): service ready in ${startup} s; ${run.seconds.size} steps in ${total.toFixed(1)} s; slowest: ${slowest.join(', ')}`,
      );
    }, 180_000);

    afterAll(async () => {
      await server?.stop();
      await database?.drop();
      if (temp) fs.rmSync(temp, { recursive: true, force: true });
    }, 30_000);

    for (const block of blocks) {
      const first =
        block.segments[0]?.code
          .split('\n')
          .find((l) => l.trim() && !l.trim().startsWith('#'))
          ?.trim() ?? '';
      const title = `README.md:${block.line} ${first.slice(0, 70)}`;
      if (block.skip !== undefined) {
        it.skip(`${title} (not run: ${block.skip})`, () => {});
        continue;
      }
      it(title, () => {
        block.segments.forEach((segment, s) => {
          const output = run.outputs.get(`${block.index} ${s}`);
          if (output === undefined)
            throw new Error(`README.md:${segment.line} was not reached: an earlier block failed`);
          const done =
            s + 1 < block.segments.length ? run.outputs.has(`${block.index} ${s + 1}`) : run.ended.has(block.index);
          const took = run.seconds.get(`${block.index} ${s}`)!.toFixed(1);
          if (!done)
            throw new Error(
              `README.md:${segment.line} failed after ${took} s (bash exit status ${run.status}):\n${segment.code}\noutput:\n${output}`,
            );
          if (segment.expected && !matchesShown(output, segment.expected)) {
            expect(
              output.trim(),
              `README.md:${segment.line}: the output differs from what the README shows\n${segment.code}`,
            ).toBe(segment.expected.join('\n'));
          }
        });
      });
    }

    it('leaves the checkout as it found it: git status is the same after the walkthrough', () => {
      expect(gitStatus()).toBe(statusBefore);
    });
  }),
);
