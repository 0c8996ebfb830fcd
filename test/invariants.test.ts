// Caps and uniqueness rules hold when requests arrive at the same moment. For each rule, N simultaneous requests,
// mixing REST and GraphQL, go to one instance on the embedded database, and are split across two instances sharing
// one PostgreSQL database (and one DATA_DIR) on a server. Each rule is checked from the database afterwards (counts,
// sums, exactly one primary), no request answers 500, and a refused request leaves nothing: no row that counts, no
// blob a row does not reference, no temporary file. The file rules run on local disk and on S3 (an S3-compatible
// server in this process).
//
// Rounds: a rule enforced by a read-then-write breaks in most rounds here (the team cap broke in 7 rounds of 8 across
// two instances before its row lock); even a race that wins only one round in four survives R rounds with
// probability 0.75^R, so R = 12 leaves it a 3 % chance per rule, and one in two (0.5^12) well under 0.1 %. A round
// is a fresh version, download or user, so no round leans on what an earlier one left.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { forEachDatabase, startTestApp, type DbKind, type TestApp } from './helpers/app.js';
import type { Config } from '../src/config.js';
import type { Storage } from '../src/files/storage/index.js';

const ROUNDS = 12;
/**
 * With S3 storage the locks are the same code as on local disk (proved over ROUNDS above); these rounds show that a
 * refusal leaves nothing in the bucket either, and that the caps still hold with a slower put between the checks.
 */
const S3_ROUNDS = 6;
const N = 6;
// A rule's rounds take 2–9 s alone; the whole suite shares two cores with every other test file.
vi.setConfig({ testTimeout: 90_000 });

let s3: any;
let s3Dir = '';
let s3Endpoint = '';
let bucketNo = 0;
beforeAll(async () => {
  s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-invariants-s3-'));
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: s3Dir,
    configureBuckets: [0, 1].map((i) => ({ name: `invariants${i}` })),
  });
  s3Endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
});
afterAll(async () => {
  await s3?.close();
  fs.rmSync(s3Dir, { recursive: true, force: true });
});

interface Outcome {
  status: number;
  code?: string;
  params?: any;
  data?: any;
}

/** A REST body or a GraphQL answer as one shape: the first error's code and params, else the data. */
async function answer(res: Response, face: 'rest' | 'gql', pick: (body: any) => any): Promise<Outcome> {
  const body = (await res.json()) as any;
  if (face === 'rest')
    return body.errors?.length
      ? { status: res.status, code: body.errors[0].code, params: body.errors[0].params }
      : { status: res.status, data: pick(body) };
  const err = body.errors?.[0];
  return err
    ? { status: res.status, code: err.extensions?.code, params: err.extensions?.params }
    : { status: res.status, data: pick(body.data) };
}

async function listKeys(storage: Storage): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of storage.list()) keys.push(b.key);
  return keys.sort();
}

forEachDatabase((kind) => {
  describe('local storage', () => rules(kind, 'local'));
  describe('S3 storage', () => rules(kind, 's3'));
});

function rules(kind: DbKind, driver: 'local' | 's3') {
  const rounds = driver === 'local' ? ROUNDS : S3_ROUNDS;
  const fileRulesOnly = driver === 's3'; // team and flood control never touch storage
  let a: TestApp;
  let b: TestApp;
  let owner: { userId: number; key: string };
  let dataDir = '';
  /** The instance for the i-th request of a round: alternating on PostgreSQL, the one instance on the embedded database. */
  const on = (i: number) => (i % 2 === 0 ? a : b);
  /** REST for requests 0, 1 (mod 4), GraphQL for 2, 3: each face reaches each instance. */
  const faceOf = (i: number): 'rest' | 'gql' => (i % 4 < 2 ? 'rest' : 'gql');

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-invariants-'));
    const settings: Partial<Config> = { dataDir, commentFloodSeconds: 60 };
    if (driver === 's3') {
      settings.storage = 's3';
      settings.s3 = {
        bucket: `invariants${bucketNo++}`,
        region: 'us-east-1',
        endpoint: s3Endpoint,
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
        forcePathStyle: true,
      };
    }
    a = await startTestApp(kind, settings);
    b = kind === 'postgres' ? await startTestApp('postgres', settings, { url: a.app.db.url! }) : a;
    owner = await a.user(`owner_${kind}`);
  });
  afterAll(async () => {
    if (b !== a) await b?.close();
    await a?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function category(title: string, knobs: Record<string, string | number>): Promise<number> {
    const id = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title } })).body.category.category_id;
    const r = await a.rest('PUT', `/api/mc-dm-categories/${id}/`, { form: knobs });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return id;
  }
  async function download(categoryId: number): Promise<{ downloadId: number; versionId: number }> {
    const d = (
      await a.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: categoryId, title: 'Contended' },
      })
    ).body.download;
    return { downloadId: d.download_id, versionId: d.current_version_id };
  }
  async function version(downloadId: number): Promise<number> {
    return (
      await a.gqlOk(
        `mutation { createVersion(input: { downloadId: ${downloadId} }) { version { versionId } } }`,
        {},
        owner.key,
      )
    ).createVersion.version.versionId;
  }

  async function upload(
    i: number,
    versionId: number,
    bytes: Uint8Array<ArrayBuffer>,
    opts: { isPrimary?: boolean } = {},
  ): Promise<Outcome> {
    const app = on(i);
    const name = `f${i}.txt`;
    const form = new FormData();
    if (faceOf(i) === 'rest') {
      form.append('version_id', String(versionId));
      if (opts.isPrimary) form.append('is_primary', '1');
      form.append('file', new Blob([bytes]), name);
      const res = await fetch(`${app.url}/api/mc-dm-files/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': owner.key },
        body: form,
      });
      return answer(res, 'rest', (body) => body.file.file_id);
    }
    form.append(
      'operations',
      JSON.stringify({
        query:
          'mutation($f: Upload!, $v: Int!, $p: Boolean) { createFile(input: { versionId: $v, file: $f, isPrimary: $p }) { file { fileId } } }',
        variables: { f: null, v: versionId, p: opts.isPrimary ?? null },
      }),
    );
    form.append('map', JSON.stringify({ 0: ['variables.f'] }));
    form.append('0', new Blob([bytes]), name);
    const res = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': owner.key },
      body: form,
    });
    return answer(res, 'gql', (data) => data.createFile.file.fileId);
  }

  /** No answer was a 500 or a server_error, and every refusal is one of `allowed`. */
  function expectRefusedAs(outcomes: Outcome[], allowed: string[]): Outcome[] {
    for (const o of outcomes) {
      expect(o.status, JSON.stringify(o)).toBeLessThan(500);
      expect(o.code ?? 'ok', JSON.stringify(o)).not.toBe('server_error');
    }
    const refused = outcomes.filter((o) => o.code);
    for (const o of refused) expect(allowed, JSON.stringify(o)).toContain(o.code);
    return refused;
  }

  /**
   * Storage holds exactly the blobs the rows reference, and no temporary file is left (a GraphQL upload's temporary
   * file is removed as its answer is sent, so this waits a moment for it).
   */
  async function expectNothingLeft() {
    const storage = a.app.services.storage;
    const rows = (await a.prisma.file.findMany({ where: { storageKey: { not: null } }, select: { storageKey: true } }))
      .map((r) => r.storageKey!)
      .sort();
    expect(await listKeys(storage)).toEqual(rows);
    const temps = () => fs.readdirSync(storage.tmpDir).filter((n) => n.endsWith('.part'));
    for (let waited = 0; temps().length > 0 && waited < 2000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(temps()).toEqual([]);
  }

  const counted = (where: object) => ({ ...where, isDeleted: false, validationStatus: { not: 'failed' as const } });

  it(`max_files_per_version: ${N} simultaneous uploads into a version with room for 2 (${rounds} rounds)`, async () => {
    const c = await category('Two files', { allow_multi_file: 1, max_files_per_version: 2 });
    for (let round = 0; round < rounds; round++) {
      const { versionId } = await download(c);
      const outcomes = await Promise.all(
        Array.from({ length: N }, (_, i) => upload(i, versionId, new TextEncoder().encode(`file ${round}.${i}`))),
      );
      const refused = expectRefusedAs(outcomes, ['mc_dm_api_error.too_many_files']);
      expect(refused).toHaveLength(N - 2);
      expect(await a.prisma.file.count({ where: { versionId } })).toBe(2);
    }
    await expectNothingLeft();
  });

  /**
   * A byte cap refused under the lock keeps nothing; one the processors saw before the bytes were stored keeps its
   * FAILED row in quarantine (the documented processor rejection, named by params.file_id). Either way the refused
   * file takes no room.
   */
  async function expectSizeRefusals(outcomes: Outcome[], accepted: number) {
    const refused = expectRefusedAs(outcomes, ['mc_dm_api_error.processor_rejected']);
    expect(refused).toHaveLength(N - accepted);
    for (const o of refused) {
      expect(o.params.processor).toBe('size');
      if (o.params.file_id != null) {
        const row = await a.prisma.file.findUniqueOrThrow({ where: { id: o.params.file_id } });
        expect(row).toMatchObject({ validationStatus: 'failed', isPrimary: false, isAvailable: false });
        expect(row.storageKey).toMatch(/^quarantine\//);
      }
    }
  }

  it(`max_version_size: ${N} simultaneous 1000-byte uploads into a version with room for 3000 bytes (${rounds} rounds)`, async () => {
    const c = await category('Three thousand bytes a version', { max_files_per_version: 50, max_version_size: 3000 });
    const bytes = new Uint8Array(1000).fill(0x61);
    for (let round = 0; round < rounds; round++) {
      const { versionId } = await download(c);
      const outcomes = await Promise.all(Array.from({ length: N }, (_, i) => upload(i, versionId, bytes)));
      await expectSizeRefusals(outcomes, 3);
      const sum = await a.prisma.file.aggregate({
        where: counted({ versionId }),
        _sum: { fileSize: true },
        _count: true,
      });
      expect(sum._sum.fileSize).toBe(3000n);
      expect(sum._count).toBe(3);
    }
    await expectNothingLeft();
  });

  it(`max_download_size: ${N} simultaneous 1000-byte uploads spread over three versions of a download with room for 3000 bytes (${rounds} rounds)`, async () => {
    // A version's lock alone lets uploads into different versions pass together: the download's row lock serialises them.
    const c = await category('Three thousand bytes a download', {
      enable_versioning: 1,
      max_files_per_version: 50,
      max_download_size: 3000,
    });
    const bytes = new Uint8Array(1000).fill(0x62);
    for (let round = 0; round < rounds; round++) {
      const d = await download(c);
      const versions = [d.versionId, await version(d.downloadId), await version(d.downloadId)];
      const outcomes = await Promise.all(Array.from({ length: N }, (_, i) => upload(i, versions[i % 3]!, bytes)));
      await expectSizeRefusals(outcomes, 3);
      const sum = await a.prisma.file.aggregate({
        where: counted({ version: { downloadId: d.downloadId } }),
        _sum: { fileSize: true },
      });
      expect(sum._sum.fileSize).toBe(3000n);
    }
    await expectNothingLeft();
  });

  it(`one primary file per version: primary uploads, primary marks and hard deletes at once (${rounds} rounds)`, async () => {
    const c = await category('Primaries', { max_files_per_version: 50 });
    for (let round = 0; round < rounds; round++) {
      const { versionId } = await download(c);
      const first = await upload(0, versionId, new TextEncoder().encode('first'));
      const second = await upload(1, versionId, new TextEncoder().encode('second'));
      const third = await upload(2, versionId, new TextEncoder().encode('third'));
      const [f1, f2, f3] = [first.data, second.data, third.data] as number[];
      const mark = (i: number, fileId: number) =>
        faceOf(i) === 'rest'
          ? on(i)
              .rest('PUT', `/api/mc-dm-files/${fileId}/`, { key: owner.key, form: { is_primary: 1 } })
              .then((r) =>
                r.body.errors
                  ? { status: r.status, code: r.body.errors[0].code }
                  : { status: r.status, data: r.body.file.is_primary },
              )
          : on(i)
              .gql(
                `mutation { updateFile(input: { fileId: ${fileId}, isPrimary: true }) { file { isPrimary } } }`,
                {},
                owner.key,
              )
              .then((r) => ({ status: r.status, code: r.codes[0], data: r.data?.updateFile }));
      const remove = (i: number, fileId: number) =>
        faceOf(i) === 'rest'
          ? on(i)
              .rest('DELETE', `/api/mc-dm-files/${fileId}/`, { query: { hard: 1 } })
              .then((r) => ({ status: r.status, code: r.body.errors?.[0]?.code }))
          : on(i)
              .gql(`mutation { deleteFile(input: { fileId: ${fileId}, hard: true }) { success } }`)
              .then((r) => ({ status: r.status, code: r.codes[0] }));
      const outcomes: Outcome[] = await Promise.all([
        upload(0, versionId, new TextEncoder().encode('new primary, REST'), { isPrimary: true }),
        upload(3, versionId, new TextEncoder().encode('new primary, GraphQL'), { isPrimary: true }),
        mark(1, f2),
        mark(2, f3),
        mark(4, f1),
        // The first file (the primary) is deleted twice at once and marked while it goes: one delete wins, the
        // other and the mark find it gone (404), and the next file by display order may become primary meanwhile.
        remove(5, f1),
        remove(6, f1),
      ]);
      const refused = expectRefusedAs(outcomes, ['mc_dm_api_error.file_not_found']);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(await a.prisma.file.count({ where: { id: f1 } })).toBe(0);
      expect(await a.prisma.file.count({ where: { versionId, isPrimary: true, isDeleted: false } })).toBe(1);
    }
    await expectNothingLeft();
  });

  it(`a file and its download's hard delete at once: the file is refused, or added and then removed with its blob (${rounds} rounds)`, async () => {
    const c = await category('Short-lived', { max_files_per_version: 50 });
    for (let round = 0; round < rounds; round++) {
      const { downloadId, versionId } = await download(c);
      const remove =
        round % 2 === 0
          ? on(round)
              .rest('DELETE', `/api/mc-dm-downloads/${downloadId}/`, { query: { hard: 1 } })
              .then((r) => ({ status: r.status, code: r.body.errors?.[0]?.code }))
          : on(round)
              .gql(`mutation { deleteDownload(input: { downloadId: ${downloadId}, hard: true }) { success } }`)
              .then((r) => ({ status: r.status, code: r.codes[0] }));
      const outcomes = await Promise.all([
        ...Array.from({ length: N - 1 }, (_, i) => upload(i, versionId, new TextEncoder().encode(`doomed ${i}`))),
        remove,
      ]);
      expect(outcomes[N - 1]!.code, JSON.stringify(outcomes[N - 1])).toBeUndefined();
      expectRefusedAs(outcomes, ['mc_dm_api_error.download_not_found', 'mc_dm_api_error.version_not_found']);
      expect(await a.prisma.file.count({ where: { versionId } })).toBe(0);
    }
    await expectNothingLeft();
  });

  it.skipIf(fileRulesOnly)(
    `max_team_members and team uniqueness: ${N} simultaneous adds of 3 users, each twice, cap 2 (${rounds} rounds)`,
    async () => {
      // Only GraphQL adds team members (the REST API has no route for it).
      const c = await category('Team of two', { max_team_members: 2 });
      const members = await Promise.all([0, 1, 2].map((i) => a.user(`member_${i}_${kind}`)));
      for (let round = 0; round < rounds; round++) {
        const { downloadId } = await download(c);
        const outcomes = await Promise.all(
          Array.from({ length: N }, (_, i) =>
            on(i)
              .gql(
                `mutation { addTeamMember(input: { downloadId: ${downloadId}, userId: ${members[i % 3]!.userId} }) { ok } }`,
                {},
                owner.key,
              )
              .then((r) => ({ status: r.status, code: r.codes[0], data: r.data?.addTeamMember?.ok })),
          ),
        );
        expectRefusedAs(outcomes, ['mc_dm_api_error.too_many_team_members']);
        const team = await a.prisma.teamMember.findMany({ where: { downloadId } });
        expect(team).toHaveLength(2);
        expect(new Set(team.map((m) => m.userId)).size).toBe(2);
        // Each accepted user's two adds both answer ok (the second changes nothing); the refused user's both refuse.
        const okUsers = new Set(outcomes.flatMap((o, i) => (o.data ? [members[i % 3]!.userId] : [])));
        expect([...okUsers].sort()).toEqual(team.map((m) => m.userId).sort());
      }
    },
  );

  it.skipIf(fileRulesOnly)(
    `comment flood control: ${N} simultaneous comments by one user, one accepted (${rounds} rounds)`,
    async () => {
      const c = await category('Talkative', {});
      const { downloadId } = await download(c);
      for (let round = 0; round < rounds; round++) {
        const poster = await a.user(`poster_${round}_${kind}`);
        const outcomes = await Promise.all(
          Array.from({ length: N }, (_, i) =>
            faceOf(i) === 'rest'
              ? on(i)
                  .rest('POST', '/api/mc-dm-comments/', {
                    key: poster.key,
                    form: { download_id: downloadId, message: `first! ${i}` },
                  })
                  .then((r) => ({ status: r.status, code: r.body.errors?.[0]?.code }))
              : on(i)
                  .gql(
                    `mutation { createComment(input: { downloadId: ${downloadId}, message: "first! ${i}" }) { comment { commentId } } }`,
                    {},
                    poster.key,
                  )
                  .then((r) => ({ status: r.status, code: r.codes[0] })),
          ),
        );
        const refused = expectRefusedAs(outcomes, ['mc_dm_api_error.rate_limited']);
        expect(refused).toHaveLength(N - 1);
        expect(await a.prisma.comment.count({ where: { userId: poster.userId } })).toBe(1);
      }
    },
  );
}
