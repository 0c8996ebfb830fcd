// The download list's owner and tag filters, and the tags the REST envelope carries with with=full: on both faces,
// on both databases, with totals that count what the filter matches.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

forEachDatabase((kind) => {
  let t: TestApp;
  let alice: { key: string; userId: number };
  let bob: { key: string; userId: number };
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    t = await startTestApp(kind, { readCacheMb: 0 });
    alice = await t.user('alice');
    bob = await t.user('bob');
    const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Mods' } })).body.category;
    const make = async (who: { key: string }, title: string, tags: string[]) => {
      const r = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: who.key,
        form: { category_id: category.category_id, title, version_string: '1', tags },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      ids[title] = r.body.download.download_id;
    };
    await make(alice, 'Maps', ['Maps', 'big']);
    await make(alice, 'Tools', ['tools']);
    await make(bob, 'More maps', ['maps']);
  });
  afterAll(() => t?.close());

  const restTitles = async (query: string, key?: string) => {
    const r = await t.rest('GET', `/api/mc-dm-downloads/?${query}`, key ? { key } : {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { titles: r.body.downloads.map((d: any) => d.title).sort(), total: r.body.pagination.total, body: r.body };
  };

  it('REST: tag (repeatable, all of them, as stored), user_id, and the two together; totals count the matches', async () => {
    expect(await restTitles('tag=MAPS')).toMatchObject({ titles: ['Maps', 'More maps'], total: 2 });
    expect(await restTitles('tag=maps&tag=big')).toMatchObject({ titles: ['Maps'], total: 1 });
    expect(await restTitles('tag[]=maps&tag[]=big')).toMatchObject({ titles: ['Maps'], total: 1 });
    expect(await restTitles(`user_id=${alice.userId}`)).toMatchObject({ titles: ['Maps', 'Tools'], total: 2 });
    expect(await restTitles(`user_id=${bob.userId}&tag=maps`)).toMatchObject({ titles: ['More maps'], total: 1 });
    expect(await restTitles('tag=none')).toMatchObject({ titles: [], total: 0 });
    // Past the last page the total is counted alone.
    expect(await restTitles('tag=maps&page=5')).toMatchObject({ titles: [], total: 2 });
  });

  it('GraphQL: downloads(tags:, userId:) answers the same rows and totals', async () => {
    const q = `query($t: [String!], $u: Int) { downloads(tags: $t, userId: $u) { nodes { title } pagination { total } } }`;
    const r = await t.gqlOk(q, { t: ['maps', 'BIG'] });
    expect(r.downloads).toEqual({ nodes: [{ title: 'Maps' }], pagination: { total: 1 } });
    const mine = await t.gqlOk(q, { u: bob.userId });
    expect(mine.downloads.pagination.total).toBe(1);
  });

  it('with=full carries the tags, sorted, on the list and the single download (and only with=full)', async () => {
    const { body } = await restTitles(`tag=big&with=full`);
    expect(body.downloads[0].tags).toEqual(['big', 'maps']);
    const one = await t.rest('GET', `/api/mc-dm-downloads/${ids.Tools}/`, { query: { with: 'full' } });
    expect(one.body.download.tags).toEqual(['tools']);
    const plain = await t.rest('GET', `/api/mc-dm-downloads/${ids.Tools}/`);
    expect(plain.body.download).not.toHaveProperty('tags');
  });

  it('refuses bad filters on both faces: too many tags, a tag too long, a user id that is not a number', async () => {
    const many = Array.from({ length: 21 }, (_, i) => `tag=t${i}`).join('&');
    const r = await t.rest('GET', `/api/mc-dm-downloads/?${many}`);
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'tags' } });
    expect((await t.rest('GET', `/api/mc-dm-downloads/?tag=${'x'.repeat(51)}`)).status).toBe(400);
    const u = await t.rest('GET', '/api/mc-dm-downloads/?user_id=abc');
    expect(u.status).toBe(400);
    expect(u.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'user_id' } });
    const g = await t.gql(
      '{ downloads(tags: ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u"]) { nodes { title } } }',
    );
    expect(g.codes).toEqual(['invalid_input']);
  });
});
