// Downloads: the rules around the main paths — category counts through every state change, moves, concurrency,
// the GraphQL face's bad paths, team rights over files, the purge job — on every database.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { purgeExpiredDownloads } from '../src/jobs/purge.js';
import type { LocalStorage } from '../src/files/storage/local.js';

const DAY = 86_400_000;

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let other: { userId: number; key: string };
  let mod: { userId: number; key: string };
  beforeAll(async () => {
    t = await startTestApp(kind);
    owner = await t.user('owner');
    other = await t.user('other');
    mod = await t.user('mod', { isModerator: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function category(title: string, knobs: Record<string, any> = {}): Promise<number> {
    const id = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title } })).body.category.category_id;
    if (Object.keys(knobs).length) await t.rest('PUT', `/api/mc-dm-categories/${id}/`, { form: knobs });
    return id;
  }
  const create = async (categoryId: number, form: Record<string, any> = {}, key = owner.key) => {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', {
      key,
      form: { category_id: categoryId, title: 'A download', ...form },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.download;
  };
  const countOf = async (categoryId: number) =>
    (await t.prisma.category.findUniqueOrThrow({ where: { id: categoryId } })).downloadCount;
  const row = (id: number) => t.prisma.download.findUniqueOrThrow({ where: { id } });
  const restore = (id: number, key = mod.key) =>
    t.gql(
      `mutation($i: RestoreDownloadInput!) { restoreDownload(input: $i) { download { downloadState } } }`,
      { i: { downloadId: id } },
      key,
    );
  const perm = (categoryId: number, group: string, permission: string, value: string) =>
    t.gqlOk(
      `mutation { setCategoryPermission(input: { categoryId: ${categoryId}, group: "${group}", permission: "${permission}", value: ${value} }) { ok } }`,
    );
  const newPrefix = async (title: string, ...categoryIds: number[]) => {
    const p = (await t.gqlOk(`mutation { createPrefix(input: { title: "${title}" }) { prefix { prefixId } } }`))
      .createPrefix.prefix.prefixId;
    for (const c of categoryIds)
      await t.gqlOk(`mutation { assignPrefix(input: { prefixId: ${p}, categoryId: ${c} }) { ok } }`);
    return p as number;
  };

  describe('category download_count', () => {
    it('follows create, approval, soft delete, restore, hard delete and purge', async () => {
      const c = await category('Counted');
      const strict = await category('Counted strict', { require_approval: 1 });
      expect(await countOf(c)).toBe(0);
      const a = await create(c);
      const b = await create(c);
      expect(await countOf(c)).toBe(2);
      const waiting = await create(strict);
      expect(waiting.download_state).toBe('moderated');
      expect(await countOf(strict)).toBe(0);

      await t.rest('DELETE', `/api/mc-dm-downloads/${a.download_id}/`, { key: owner.key });
      expect(await countOf(c)).toBe(1);
      expect((await restore(a.download_id)).data.restoreDownload.download.downloadState).toBe('VISIBLE');
      expect(await countOf(c)).toBe(2);

      // A moderated download comes back moderated and still does not count.
      await t.rest('DELETE', `/api/mc-dm-downloads/${waiting.download_id}/`, { key: owner.key });
      expect((await restore(waiting.download_id)).data.restoreDownload.download.downloadState).toBe('MODERATED');
      expect(await countOf(strict)).toBe(0);

      await t.rest('DELETE', `/api/mc-dm-downloads/${b.download_id}/`, { key: mod.key, query: { hard: 1 } });
      expect(await countOf(c)).toBe(1);

      await t.rest('DELETE', `/api/mc-dm-downloads/${a.download_id}/`, { key: owner.key });
      expect(await countOf(c)).toBe(0);
      await purgeExpiredDownloads(t.prisma, t.app.services.storage, 30, new Date(Date.now() + 31 * DAY));
      expect(await t.prisma.download.count({ where: { id: a.download_id } })).toBe(0);
      expect(await countOf(c)).toBe(0);
    });

    it('stays right when downloads are created in one category at the same moment', async () => {
      const c = await category('Crowded');
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          t.rest('POST', '/api/mc-dm-downloads/', {
            key: owner.key,
            form: { category_id: c, title: `Parallel ${i}`, tags: ['shared', `own ${i}`] },
          }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
      expect(await countOf(c)).toBe(12);
      expect(await t.prisma.tag.count({ where: { name: 'shared' } })).toBe(1);
    });
  });

  describe('moving', () => {
    it('needs moveAny and the right to add downloads to the target; nothing changes when refused', async () => {
      const from = await category('Move from');
      const noAdd = await category('Move no add');
      const hidden = await category('Move hidden');
      await perm(noAdd, 'moderator', 'add', 'DENY');
      await perm(noAdd, 'registered', 'add', 'DENY');
      await perm(hidden, 'moderator', 'view', 'DENY');
      await perm(hidden, 'registered', 'view', 'DENY');
      const d = await create(from, { title: 'Stays put' });
      const before = await row(d.download_id);
      for (const [target, key, status, code] of [
        [noAdd, mod.key, 403, 'do_not_have_permission'],
        [hidden, mod.key, 403, 'do_not_have_permission'],
        [noAdd, owner.key, 403, 'do_not_have_permission'],
        [99999, mod.key, 404, 'mc_dm_api_error.category_not_found'],
        ['x', mod.key, 400, 'invalid_input'],
      ] as const) {
        const r = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
          key,
          form: { category_id: target, title: 'Changed' },
        });
        expect(r.status, `${target}`).toBe(status);
        expect(r.body.errors[0].code).toBe(code);
      }
      expect(await row(d.download_id)).toEqual(before);
      expect(await countOf(from)).toBe(1);
      // The same refusal through GraphQL.
      const g = await t.gql(
        `mutation { updateDownload(input: { downloadId: ${d.download_id}, categoryId: ${noAdd} }) { download { categoryId } } }`,
        {},
        mod.key,
      );
      expect(g.codes).toEqual(['do_not_have_permission']);
      expect(await row(d.download_id)).toEqual(before);
    });

    it('keeps a prefix the target offers, drops one it does not, and checks a sent prefix against the target', async () => {
      const a = await category('Prefix A');
      const b = await category('Prefix B');
      const both = await newPrefix('Both', a, b);
      const onlyA = await newPrefix('Only A', a);
      const kept = await create(a, { prefix_id: both });
      const dropped = await create(a, { prefix_id: onlyA });
      const move = (id: number, form: Record<string, any>) =>
        t.rest('PUT', `/api/mc-dm-downloads/${id}/`, { key: mod.key, form });
      expect((await move(kept.download_id, { category_id: b })).body.download).toMatchObject({
        category_id: b,
        prefix_id: both,
      });
      expect((await move(dropped.download_id, { category_id: b })).body.download).toMatchObject({
        category_id: b,
        prefix_id: 0,
      });

      const third = await create(a, { prefix_id: both });
      const before = await row(third.download_id);
      const refused = await move(third.download_id, { category_id: b, prefix_id: onlyA });
      expect(refused.status).toBe(422);
      expect(refused.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.prefix_not_allowed',
        params: { prefix_id: onlyA, category_id: b },
      });
      expect(await row(third.download_id)).toEqual(before);
    });
  });

  describe('paths and ids', () => {
    it('PUT and DELETE refuse malformed and unknown ids', async () => {
      for (const method of ['PUT', 'DELETE']) {
        const bad = await t.rest(method, '/api/mc-dm-downloads/abc/', { key: mod.key, form: { title: 'x' } });
        expect(bad.status).toBe(400);
        expect(bad.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'download_id' } });
        const missing = await t.rest(method, '/api/mc-dm-downloads/987654/', { key: mod.key, form: { title: 'x' } });
        expect(missing.status).toBe(404);
        expect(missing.body.errors[0].code).toBe('mc_dm_api_error.download_not_found');
      }
    });

    it('an update by a visitor who cannot see the download answers 403 and changes nothing', async () => {
      const strict = await category('Hidden update', { require_approval: 1 });
      const d = await create(strict, { title: 'Pending' });
      const before = await row(d.download_id);
      const r = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: other.key,
        form: { title: 'Hijack' },
      });
      expect(r.status).toBe(403);
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: other.key })).status).toBe(403);
      expect(await row(d.download_id)).toEqual(before);
    });
  });

  describe('concurrency', () => {
    it('simultaneous tag replacements leave exactly one of the sent sets', async () => {
      const c = await category('Tag race');
      const d = await create(c, { tags: ['start'] });
      const sets = Array.from({ length: 6 }, (_, i) => [`set${i} a`, `set${i} b`, `set${i} c`]);
      const results = await Promise.all(
        sets.map((tags) => t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key, form: { tags } })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      const tags = (await t.gqlOk(`{ download(downloadId: ${d.download_id}) { tags } }`)).download.tags;
      expect(sets).toContainEqual(tags);
    });

    it('versions added to one download at the same moment all land, and one of them is current (no deadlock)', async () => {
      const c = await category('Version race', { enable_versioning: 1 });
      const d = await create(c);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          t.gql(
            `mutation { createVersion(input: { downloadId: ${d.download_id}, versionString: "2.${i}" }) { version { versionId } } }`,
            {},
            owner.key,
          ),
        ),
      );
      expect(results.map((r) => r.errors ?? [])).toEqual(Array(10).fill([]));
      const made = results.map((r) => r.data.createVersion.version.versionId as number);
      const g = (
        await t.gqlOk(`{ download(downloadId: ${d.download_id}) { currentVersionId versions { versionId } } }`)
      ).download;
      expect(g.versions).toHaveLength(11);
      expect(made).toContain(g.currentVersionId);
    });

    it('simultaneous updates of tags and text fields lose neither', async () => {
      const c = await category('Mixed race');
      const d = await create(c, { tags: ['old'] });
      await Promise.all([
        t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key, form: { tags: ['new'] } }),
        t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key, form: { title: 'New title' } }),
        t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
          key: owner.key,
          form: { description: 'New description' },
        }),
      ]);
      const g = (await t.gqlOk(`{ download(downloadId: ${d.download_id}) { title description tags } }`)).download;
      expect(g).toEqual({ title: 'New title', description: 'New description', tags: ['new'] });
    });
  });

  describe('GraphQL face, bad paths', () => {
    let c: number;
    beforeAll(async () => {
      c = await category('GraphQL rules');
    });

    it('scopes: reads need mc_dm_download:read, writes mc_dm_download:write, hard deletes delete_hard', async () => {
      const d = await create(c, { title: 'Scoped' });
      const writeOnly = await t.key('USER', ['mc_dm_download:write'], owner.userId);
      const readOnly = await t.key('USER', ['mc_dm_download:read'], owner.userId);
      const modNoHard = await t.key('USER', ['mc_dm_download:read', 'mc_dm_download:write'], mod.userId);
      const scopeOf = (r: any) => r.errors?.[0]?.extensions?.params?.scope;

      const list = await t.gql(`{ downloads { nodes { downloadId } } }`, {}, writeOnly);
      expect(list.codes).toEqual(['api_scope_missing']);
      expect(scopeOf(list)).toBe('mc_dm_download:read');
      expect((await t.gql(`{ download(downloadId: ${d.download_id}) { title } }`, {}, writeOnly)).codes).toEqual([
        'api_scope_missing',
      ]);

      const before = await t.prisma.download.count();
      const created = await t.gql(
        `mutation { createDownload(input: { categoryId: ${c}, title: "No" }) { download { downloadId } } }`,
        {},
        readOnly,
      );
      expect(created.codes).toEqual(['api_scope_missing']);
      expect(scopeOf(created)).toBe('mc_dm_download:write');
      for (const m of [
        `updateDownload(input: { downloadId: ${d.download_id}, title: "No" }) { download { title } }`,
        `deleteDownload(input: { downloadId: ${d.download_id} }) { success }`,
        `createVersion(input: { downloadId: ${d.download_id} }) { version { versionId } }`,
        `addTeamMember(input: { downloadId: ${d.download_id}, userId: ${other.userId} }) { ok }`,
      ]) {
        expect((await t.gql(`mutation { ${m} }`, {}, readOnly)).codes, m).toEqual(['api_scope_missing']);
      }
      const hard = await t.gql(
        `mutation { deleteDownload(input: { downloadId: ${d.download_id}, hard: true }) { success } }`,
        {},
        modNoHard,
      );
      expect(hard.codes).toEqual(['api_scope_missing']);
      expect(scopeOf(hard)).toBe('mc_dm_download:delete_hard');
      expect(await t.prisma.download.count()).toBe(before);
      expect(await row(d.download_id)).toMatchObject({
        title: 'Scoped',
        state: 'visible',
        currentVersionId: d.current_version_id,
      });
      expect(await t.prisma.teamMember.count({ where: { downloadId: d.download_id } })).toBe(0);
    });

    it('unknown category and prefix, unassigned prefix, bad enums and pages: the same codes as REST, nothing created', async () => {
      const before = await t.prisma.download.count();
      const p = await newPrefix('Elsewhere');
      const mk = (input: string) =>
        t.gql(`mutation { createDownload(input: { ${input} }) { download { downloadId } } }`, {}, owner.key);
      expect((await mk(`categoryId: 99999, title: "x"`)).codes).toEqual(['mc_dm_api_error.category_not_found']);
      expect((await mk(`categoryId: ${c}, title: "x", prefixId: 99999`)).codes).toEqual([
        'mc_dm_api_error.prefix_not_found',
      ]);
      const notAllowed = await mk(`categoryId: ${c}, title: "x", prefixId: ${p}`);
      expect(notAllowed.codes).toEqual(['mc_dm_api_error.prefix_not_allowed']);
      expect(notAllowed.errors![0].extensions.params).toEqual({ prefix_id: p, category_id: c });
      expect((await mk(`categoryId: ${c}, title: "   "`)).codes).toEqual(['required_input_missing']);
      expect((await mk(`title: "x"`)).codes).toEqual(['invalid_input']);
      expect(await t.prisma.download.count()).toBe(before);

      for (const q of [
        `{ downloads(downloadState: GONE) { nodes { downloadId } } }`,
        `{ downloads(order: RATING) { nodes { downloadId } } }`,
        `{ downloads(perPage: 0) { nodes { downloadId } } }`,
        `{ downloads(page: 0) { nodes { downloadId } } }`,
        `{ downloads(since: "2026-02-30") { nodes { downloadId } } }`,
      ])
        expect((await t.gql(q)).codes, q).toEqual(['invalid_input']);

      const missing = await t.gql(`{ download(downloadId: 99999) { title } }`);
      expect(missing.codes).toEqual(['mc_dm_api_error.download_not_found']);
      expect(missing.data).toEqual({ download: null });
      expect((await restore(99999)).codes).toEqual(['mc_dm_api_error.download_not_found']);
    });

    it('non-moderators list only visible downloads whatever downloadState they ask for', async () => {
      const strict = await category('GraphQL strict', { require_approval: 1 });
      await create(strict, { title: 'Pending one' });
      const q = `{ downloads(categoryId: ${strict}, downloadState: MODERATED) { nodes { title downloadState } pagination { total } } }`;
      expect((await t.gqlOk(q, {}, other.key)).downloads).toEqual({ nodes: [], pagination: { total: 0 } });
      expect((await t.gqlOk(q, {}, mod.key)).downloads).toEqual({
        nodes: [{ title: 'Pending one', downloadState: 'MODERATED' }],
        pagination: { total: 1 },
      });
    });
  });

  describe('team', () => {
    it('members edit, manage files and see can_edit; only the owner or moderators change the team', async () => {
      const c = await category('Team rights');
      const d = await create(c, { title: 'Shared work' });
      const full = async (key: string) =>
        (await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key, query: { with: 'full' } })).body.download;
      expect((await full(other.key)).can_edit).toBe(false);
      const upload = async (key: string) => {
        const form = new FormData();
        form.append('version_id', String(d.current_version_id));
        form.append('file', new Blob([new TextEncoder().encode('team file')]), 'team.txt');
        const res = await fetch(`${t.url}/api/mc-dm-files/`, {
          method: 'POST',
          headers: { 'Forum-Api-Key': key },
          body: form,
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      expect((await upload(other.key)).status).toBe(403);

      const add = (userId: number, key: string) =>
        t.gql(`mutation { addTeamMember(input: { downloadId: ${d.download_id}, userId: ${userId} }) { ok } }`, {}, key);
      const remove = (userId: number, key: string) =>
        t.gql(
          `mutation { removeTeamMember(input: { downloadId: ${d.download_id}, userId: ${userId} }) { ok } }`,
          {},
          key,
        );
      expect((await add(other.userId, owner.key)).data.addTeamMember).toEqual({ ok: true });
      expect((await add(other.userId, owner.key)).data.addTeamMember).toEqual({ ok: true });
      expect(await t.prisma.teamMember.count({ where: { downloadId: d.download_id } })).toBe(1);

      expect((await full(other.key)).can_edit).toBe(true);
      expect((await full(other.key)).can_delete).toBe(false);
      const uploaded = await upload(other.key);
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: other.key })).status).toBe(403);

      // A member cannot change the team; a moderator can.
      expect((await remove(other.userId, other.key)).codes).toEqual(['do_not_have_permission']);
      expect((await add(mod.userId, other.key)).codes).toEqual(['do_not_have_permission']);
      expect(await t.prisma.teamMember.count({ where: { downloadId: d.download_id } })).toBe(1);
      expect((await remove(other.userId, mod.key)).data.removeTeamMember).toEqual({ ok: true });
      expect((await full(other.key)).can_edit).toBe(false);
      expect((await upload(other.key)).status).toBe(403);
    });

    it('max_team_members holds when adds arrive at the same moment (8 rounds of 4 simultaneous adds, cap 1 and 2)', async () => {
      // Without the download's row lock, each add counted the team before the others inserted: 7 rounds of 8 broke a
      // cap of 1 on PostgreSQL. Eight rounds make a race that wins one round in two fail this test almost surely.
      const members = await Promise.all([0, 1, 2, 3].map((i) => t.user(`teammate_${i}_${kind}`)));
      for (const cap of [1, 2]) {
        const c = await category(`Team cap ${cap}`, { max_team_members: cap });
        for (let round = 0; round < 8; round++) {
          const d = await create(c, { title: `Capped ${cap}.${round}` });
          const results = await Promise.all(
            members.map((m) =>
              t.gql(
                `mutation { addTeamMember(input: { downloadId: ${d.download_id}, userId: ${m.userId} }) { ok } }`,
                {},
                owner.key,
              ),
            ),
          );
          const added = results.filter((r) => r.data?.addTeamMember?.ok).length;
          expect(added).toBe(cap);
          expect(
            results
              .filter((r) => !r.data?.addTeamMember)
              .every((r) => r.codes[0] === 'mc_dm_api_error.too_many_team_members'),
          ).toBe(true);
          expect(await t.prisma.teamMember.count({ where: { downloadId: d.download_id } })).toBe(cap);
        }
      }
    });

    it("a download's hard delete removes its team rows", async () => {
      const c = await category('Team gone');
      const d = await create(c);
      await t.gqlOk(
        `mutation { addTeamMember(input: { downloadId: ${d.download_id}, userId: ${other.userId} }) { ok } }`,
        {},
        owner.key,
      );
      await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: mod.key, query: { hard: 1 } });
      expect(await t.prisma.teamMember.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(await t.prisma.user.count({ where: { id: other.userId } })).toBe(1);
    });
  });

  describe('purge job', () => {
    it('removes expired downloads with their versions, files, blobs and comments, audited as download.purged', async () => {
      const c = await category('Purged');
      const d = await create(c, { title: 'Expired' });
      const form = new FormData();
      form.append('version_id', String(d.current_version_id));
      form.append('file', new Blob([new TextEncoder().encode('old bytes')]), 'old.txt');
      const file = (
        (await (
          await fetch(`${t.url}/api/mc-dm-files/`, {
            method: 'POST',
            headers: { 'Forum-Api-Key': owner.key },
            body: form,
          })
        ).json()) as any
      ).file;
      const stored = await t.prisma.file.findUniqueOrThrow({ where: { id: file.file_id } });
      const blob = (t.app.services.storage as LocalStorage).pathOf(stored.storageKey!);
      expect(fs.existsSync(blob)).toBe(true);
      await t.prisma.comment.create({ data: { downloadId: d.download_id, userId: other.userId, message: 'old news' } });
      await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        query: { reason: 'Superseded' },
      });

      const deletedAt = (await row(d.download_id)).deletedAt!;
      // One second inside the window: kept.
      const early = await purgeExpiredDownloads(
        t.prisma,
        t.app.services.storage,
        30,
        new Date(deletedAt.getTime() + 30 * DAY - 1000),
      );
      expect(early).not.toContain(d.download_id);
      expect(await t.prisma.download.count({ where: { id: d.download_id } })).toBe(1);

      await purgeExpiredDownloads(
        t.prisma,
        t.app.services.storage,
        30,
        new Date(deletedAt.getTime() + 30 * DAY + 1000),
      );
      expect(await t.prisma.download.count({ where: { id: d.download_id } })).toBe(0);
      expect(await t.prisma.version.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(await t.prisma.file.count({ where: { id: file.file_id } })).toBe(0);
      expect(await t.prisma.comment.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(fs.existsSync(blob)).toBe(false);
      const audit = await t.prisma.auditLog.findMany({
        where: { contentId: d.download_id, contentType: 'download' },
        orderBy: { id: 'asc' },
      });
      expect(audit.map((a) => a.action)).toEqual(['download.soft_deleted', 'download.purged']);
      expect(audit[1]).toMatchObject({ userId: 0, reason: 'Deleted more than 30 days ago.' });
    });

    it('leaves visible and moderated downloads alone, works through more than one batch, and never purges twice', async () => {
      const c = await category('Purged in bulk');
      const old = new Date(Date.now() - 400 * DAY);
      const rows = await t.prisma.download.createManyAndReturn({
        data: Array.from({ length: 130 }, (_, i) => ({
          categoryId: c,
          userId: owner.userId,
          title: `Bulk ${i}`,
          state: 'deleted' as const,
          stateBeforeDelete: 'visible' as const,
          deletedAt: old,
        })),
      });
      const alive = await create(c, { title: 'Alive' });
      // A download that merely carries an old deletedAt but is not deleted (restored) stays.
      await t.prisma.download.update({ where: { id: alive.download_id }, data: { deletedAt: old } });
      const future = new Date(Date.now() + 10 * DAY);
      // Two purges at once (this process's timer and another instance, say): each download purged exactly once.
      const [x, y] = await Promise.all([
        purgeExpiredDownloads(t.prisma, t.app.services.storage, 30, future),
        purgeExpiredDownloads(t.prisma, t.app.services.storage, 30, future),
      ]);
      const ids = rows.map((r) => r.id);
      const reported = [...x, ...y];
      expect(new Set(reported).size).toBe(reported.length);
      // The app's own purge timer (its first run is 5 s after the start) may hold the purge's lock when these two
      // start: both then leave the work to it, and it may still be at it here.
      await expect
        .poll(() => t.prisma.download.count({ where: { categoryId: c } }), { timeout: 20_000, interval: 100 })
        .toBe(1);
      expect(await t.prisma.auditLog.count({ where: { action: 'download.purged', contentId: { in: ids } } })).toBe(130);
      expect((await row(alive.download_id)).state).toBe('visible');
      expect(await countOf(c)).toBe(1);
    });
  });
});
