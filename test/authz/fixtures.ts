// The world the authorization matrix runs in (see test/authz/expectations.ts): users, categories, and one object
// of each kind in each state, built once per database through the API with the bootstrap super-user key.
// Destructive cases that are expected to succeed get a fresh object of the same state (`fresh*`).
import { SUPER_KEY, type TestApp } from '../helpers/app.js';
import type { Actor, Scope, State } from './expectations.js';

export interface DownloadIds {
  downloadId: number;
  versionId: number;
  categoryId: number;
  fileId: number;
}
export interface CommentIds {
  commentId: number;
  downloadId: number;
}

export interface ReviewIds {
  reviewId: number;
  downloadId: number;
}

export const SPARE_GROUP = 'matrix_spare';
export const COMMENT_TEXT = 'matrix comment';
export const LINK = 'https://example.com/matrix.zip';
/** A public address literal: no name to resolve. */
export const WEBHOOK_URL = 'https://93.184.215.14/matrix-hook';

export class World {
  users!: { alice: number; bob: number; carol: number; moderator: number; admin: number };
  categories!: { open: number; approval: number; hidden: number };
  prefixId!: number;
  downloads = {} as Record<State, DownloadIds>;
  comments = {} as Record<State, CommentIds>;
  reviews = {} as Record<State, ReviewIds>;
  /** An open report that no case resolves (only refused cases use it; a resolve expected to pass gets a fresh one). */
  reportId!: number;
  private keys = new Map<string, Promise<string>>();
  /** Fresh objects made ahead of the write cases (stock()), by kind and state, or by version for files. */
  private stocked = new Map<string, unknown[]>();
  private seq = 0;
  aliceKey!: string;
  bobKey!: string;

  constructor(readonly t: TestApp) {}

  /** A unique suffix for names (usernames must be unique). */
  next(): number {
    return ++this.seq;
  }

  async gql(query: string, variables: Record<string, unknown>, key = SUPER_KEY, asUser?: number) {
    const headers: Record<string, string> = asUser ? { 'Forum-Api-User': String(asUser) } : {};
    const r = await this.t.gql(query, variables, key, headers);
    if (r.errors?.length) throw new Error(`fixture: ${JSON.stringify(r.errors)} for ${query}`);
    return r.data;
  }

  async build(): Promise<this> {
    const mk = async (username: string, isModerator = false, isAdmin = false) =>
      (
        await this.gql(`mutation($i: CreateUserInput!) { createUser(input: $i) { user { userId } } }`, {
          i: { username, isModerator, isAdmin },
        })
      ).createUser.user.userId as number;
    this.users = {
      alice: await mk('alice'),
      bob: await mk('bob'),
      carol: await mk('carol'),
      moderator: await mk('mod', true),
      admin: await mk('adm', false, true),
    };
    this.aliceKey = await this.t.key('USER', ['all'], this.users.alice);
    this.bobKey = await this.t.key('USER', ['all'], this.users.bob);
    this.categories = {
      open: await this.category({ requireCommentApproval: true }),
      approval: await this.category({ requireApproval: true }),
      hidden: await this.category({}, true),
    };
    await this.t.prisma.group.create({ data: { name: SPARE_GROUP } });
    this.prefixId = (
      await this.gql(`mutation { createPrefix(input: { title: "M" }) { prefix { prefixId } } }`, {})
    ).createPrefix.prefix.prefixId;
    for (const s of [
      'visibleOwn',
      'visibleOther',
      'moderatedOwn',
      'moderatedOther',
      'deletedOwn',
      'hidden',
    ] as State[]) {
      this.downloads[s] = await this.freshDownload(s, true);
    }
    for (const s of [
      'visibleOwn',
      'visibleOther',
      'moderatedOwn',
      'moderatedOther',
      'deletedOwn',
      'hidden',
    ] as State[]) {
      this.comments[s] = await this.freshComment(s);
    }
    for (const s of [
      'visibleOwn',
      'visibleOther',
      'moderatedOwn',
      'moderatedOther',
      'deletedOwn',
      'hidden',
    ] as State[]) {
      this.reviews[s] = await this.freshReview(s);
    }
    this.reportId = await this.freshReport();
    return this;
  }

  /** A category; `hidden`: the guest and registered groups are denied `view` there. */
  async category(config: Record<string, unknown>, hidden = false): Promise<number> {
    const { createCategory } = await this.gql(
      `mutation($i: CreateCategoryInput!) { createCategory(input: $i) { category { categoryId } } }`,
      { i: { title: `cat ${this.next()}` } },
    );
    const categoryId = createCategory.category.categoryId as number;
    await this.gql(`mutation($i: UpdateCategoryInput!) { updateCategory(input: $i) { category { categoryId } } }`, {
      i: { categoryId, maxFilesPerVersion: 100000, maxTeamMembers: 1000, ...config },
    });
    if (hidden) {
      for (const group of ['guest', 'registered']) {
        await this.gql(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
          i: { categoryId, group, permission: 'view', value: 'DENY' },
        });
      }
    }
    return categoryId;
  }

  /** A download of alice's (or bob's, for *Other) in `state`, with one link-only file on its first version. */
  async freshDownload(state: State, withFile = false): Promise<DownloadIds> {
    const made = withFile ? undefined : this.take<DownloadIds>(`download ${state}`);
    if (made) return made;
    const own = state !== 'visibleOther' && state !== 'moderatedOther';
    const owner = own ? this.users.alice : this.users.bob;
    const moderated = state.startsWith('moderated');
    const categoryId =
      state === 'hidden' ? this.categories.hidden : moderated ? this.categories.approval : this.categories.open;
    // Moderated downloads: the owner's own key in the approval category (no bypassApproval); the others through the
    // super-user key acting as the owner (it bypasses approval).
    const { createDownload } = moderated
      ? await this.gql(CREATE_DOWNLOAD, { i: { categoryId, title: 'matrix' } }, own ? this.aliceKey : this.bobKey)
      : await this.gql(CREATE_DOWNLOAD, { i: { categoryId, title: 'matrix' } }, SUPER_KEY, owner);
    const d = createDownload.download;
    if (d.downloadState !== (moderated ? 'MODERATED' : 'VISIBLE'))
      throw new Error(`fixture: download state ${d.downloadState} for ${state}`);
    const ids: DownloadIds = { downloadId: d.downloadId, versionId: d.currentVersionId, categoryId, fileId: 0 };
    if (withFile) ids.fileId = await this.freshFile(ids);
    if (state === 'deletedOwn') {
      await this.gql(`mutation($i: DeleteDownloadInput!) { deleteDownload(input: $i) { success } }`, {
        i: { downloadId: d.downloadId },
      });
    }
    return ids;
  }

  /** A link-only file on the download's first version. */
  private shared?: Promise<{ webhookId: number; deliveryId: number }>;
  /** A webhook of alice's (created by the super-user key acting as alice) with one delivery row. */
  webhook(): Promise<{ webhookId: number; deliveryId: number }> {
    this.shared ??= this.freshWebhook().then(async (webhookId) => {
      const d = await this.t.prisma.webhookDelivery.create({
        data: {
          webhookId,
          eventId: 1n,
          type: 'download.updated',
          objectId: this.downloads.visibleOwn.downloadId,
          downloadId: this.downloads.visibleOwn.downloadId,
          eventAt: new Date(),
          status: 'failed',
        },
      });
      return { webhookId, deliveryId: d.id };
    });
    return this.shared;
  }

  async freshWebhook(): Promise<number> {
    const { createWebhook } = await this.gql(
      `mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { webhook { webhookId } } }`,
      { i: { url: WEBHOOK_URL, events: ['*'], downloadId: this.downloads.visibleOwn.downloadId, active: false } },
      SUPER_KEY,
      this.users.alice,
    );
    return createWebhook.webhook.webhookId;
  }

  async freshFile(d: { versionId: number }): Promise<number> {
    const made = this.take<number>(`file ${d.versionId}`);
    if (made !== undefined) return made;
    const { createFile } = await this.gql(
      `mutation($i: CreateFileInput!) { createFile(input: $i) { file { fileId } } }`,
      { i: { versionId: d.versionId, externalUrl: LINK, linkOnly: true } },
    );
    return createFile.file.fileId;
  }

  /**
   * A comment in `state` (the state is the comment's): on alice's visible download (for `hidden`, on her download in
   * the hidden category). The open category needs comment approval: visible comments are posted through the
   * super-user key acting as the author, moderated ones with the author's own key.
   */
  async freshComment(state: State): Promise<CommentIds> {
    const made = this.take<CommentIds>(`comment ${state}`);
    if (made) return made;
    const downloadId = this.downloads[state === 'hidden' ? 'hidden' : 'visibleOwn'].downloadId;
    const own = state !== 'visibleOther' && state !== 'moderatedOther';
    const author = own ? this.users.alice : this.users.bob;
    const { createComment } = state.startsWith('moderated')
      ? await this.gql(CREATE_COMMENT, { i: { downloadId, message: COMMENT_TEXT } }, own ? this.aliceKey : this.bobKey)
      : await this.gql(CREATE_COMMENT, { i: { downloadId, message: COMMENT_TEXT } }, SUPER_KEY, author);
    const c = createComment.comment;
    if (c.commentState !== (state.startsWith('moderated') ? 'MODERATED' : 'VISIBLE'))
      throw new Error(`fixture: comment state ${c.commentState} for ${state}`);
    if (state === 'deletedOwn') {
      await this.gql(`mutation($i: DeleteCommentInput!) { deleteComment(input: $i) { success } }`, {
        i: { commentId: c.commentId },
      });
    }
    return { commentId: c.commentId, downloadId };
  }

  /**
   * A review in `state` (the review's), rating 4, on a download of its own: bob's, visible (for `hidden`, alice's in the
   * hidden category), by alice ("own") or carol. Written to the database directly: the API would not let alice review
   * her own hidden download, nor put a review straight into a state.
   */
  async freshReview(state: State): Promise<ReviewIds> {
    const made = this.take<ReviewIds>(`review ${state}`);
    if (made) return made;
    const downloadId = (await this.freshDownload(state === 'hidden' ? 'hidden' : 'visibleOther')).downloadId;
    const own = state !== 'visibleOther' && state !== 'moderatedOther';
    const userId = own ? this.users.alice : this.users.carol;
    const r = await this.t.prisma.review.create({
      data: {
        downloadId,
        userId,
        rating: 4,
        message: 'matrix review',
        state: state.startsWith('moderated') ? 'moderated' : state === 'deletedOwn' ? 'deleted' : 'visible',
      },
    });
    return { reviewId: r.id, downloadId };
  }

  /** An open report by carol, of an id of its own (one open report per reporter and content). */
  async freshReport(): Promise<number> {
    const r = await this.t.prisma.report.create({
      data: {
        contentType: 'download',
        contentId: 1_000_000 + this.next(),
        userId: this.users.carol,
        reason: 'matrix',
      },
    });
    return r.id;
  }

  /** A fresh (empty) category in the category state. */
  async freshCategory(state: 'open' | 'hidden'): Promise<number> {
    return this.category({}, state === 'hidden');
  }

  /** A USER key of alice's, to revoke. */
  async freshKeyId(): Promise<number> {
    const { createApiKey } = await this.gql(
      `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { apiKey { apiKeyId } } }`,
      { i: { type: 'USER', userId: this.users.alice, scopes: ['mc_dm_download:read'] } },
    );
    return createApiKey.apiKey.apiKeyId;
  }

  /** Objects made by stock() that no case took: none, when stock() was told exactly what the cases take. */
  leftInStock(): number {
    return [...this.stocked.values()].reduce((n, list) => n + list.length, 0);
  }

  private take<T>(what: string): T | undefined {
    return this.stocked.get(what)?.pop() as T | undefined;
  }

  /**
   * Makes ahead, in bulk, the fresh objects the write cases will ask for: `needs` counts them by kind and state. Each
   * is a copy, row for row, of the object of that state the world already holds, which the API made: a download with
   * its first version, a comment on the same download, a file on the same version, a review with a download copied
   * for it. The copies pass through the same triggers (totals, search words, cache versions) as the API's rows. About
   * 800 objects in a few statements, where the API took a request or three each.
   */
  async stock(needs: Partial<Record<'download' | 'comment' | 'file' | 'review', Partial<Record<State, number>>>>) {
    for (const [state, n] of Object.entries(needs.download ?? {}) as [State, number][]) {
      const made = await this.copyDownloads(this.downloads[state], n);
      this.stocked.set(
        `download ${state}`,
        made.map((d) => ({ ...d, categoryId: this.downloads[state].categoryId })),
      );
    }
    for (const [state, n] of Object.entries(needs.comment ?? {}) as [State, number][]) {
      const { commentId, downloadId } = this.comments[state];
      const ids = await this.copies('comment', commentId, n);
      this.stocked.set(
        `comment ${state}`,
        ids.map((id) => ({ commentId: id, downloadId })),
      );
    }
    for (const [state, n] of Object.entries(needs.file ?? {}) as [State, number][]) {
      const d = this.downloads[state];
      // A version's second file is not its primary one (one primary per version).
      this.stocked.set(
        `file ${d.versionId}`,
        await this.copies('file', d.fileId, n, undefined, undefined, { isPrimary: 'false' }),
      );
    }
    for (const [state, n] of Object.entries(needs.review ?? {}) as [State, number][]) {
      const exemplar = this.reviews[state];
      const [version] = await this.t.app.db.query<{ id: number }>(
        `SELECT "currentVersionId" AS id FROM download WHERE id = $1`,
        [exemplar.downloadId],
      );
      const downloads = await this.copyDownloads({ downloadId: exemplar.downloadId, versionId: version!.id }, n);
      const ids = await this.copies(
        'review',
        exemplar.reviewId,
        n,
        'downloadId',
        downloads.map((d) => d.downloadId),
      );
      this.stocked.set(
        `review ${state}`,
        ids.map((id, i) => ({ reviewId: id, downloadId: downloads[i]!.downloadId })),
      );
    }
  }

  /** `n` copies of a download and of its current version (the copy's current version), in two statements. */
  private async copyDownloads(d: { downloadId: number; versionId: number }, n: number): Promise<DownloadIds[]> {
    const downloads = await this.copies('download', d.downloadId, n, 'currentVersionId', Array(n).fill(null));
    const versions = await this.copies('version', d.versionId, n, 'downloadId', downloads);
    await this.t.app.db.query(
      `UPDATE download SET "currentVersionId" = c.v FROM unnest($1::int[], $2::int[]) AS c(d, v) WHERE download.id = c.d`,
      [downloads, versions],
    );
    return downloads.map((downloadId, i) => ({ downloadId, versionId: versions[i]!, categoryId: 0, fileId: 0 }));
  }

  /**
   * `n` copies of the row `id` of `table` (every column but the id; `column`, when given, takes one value per copy;
   * `fixed` gives columns an SQL value of their own). The new ids, in the order of `values`.
   */
  private async copies(
    table: string,
    id: number,
    n: number,
    column?: string,
    values?: unknown[],
    fixed: Record<string, string> = {},
  ): Promise<number[]> {
    const db = this.t.app.db;
    const columns = (
      await db.query<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' AND column_name <> 'id'
         ORDER BY ordinal_position`,
        [table],
      )
    ).map((r) => r.c);
    const kept = columns.filter((c) => c !== column && !(c in fixed));
    const set = Object.keys(fixed);
    const q = (c: string) => `"${c}"`;
    const rows = await db.query<{ id: number; v: number | null }>(
      `WITH made AS (
         INSERT INTO "${table}" (${[...kept, ...set, ...(column ? [column] : [])].map(q).join(', ')})
         SELECT ${[...kept.map((c) => `src.${q(c)}`), ...set.map((c) => fixed[c]), ...(column ? ['x.v'] : [])].join(', ')}
         FROM "${table}" src, unnest($2::int[]) WITH ORDINALITY AS x(v, ord)
         WHERE src.id = $1
         RETURNING id${column ? `, ${q(column)} AS v` : ''})
       SELECT * FROM made`,
      [id, values ?? Array.from({ length: n }, (_, i) => i)],
    );
    if (rows.length !== n) throw new Error(`fixture: ${rows.length} copies of ${table} ${id}, wanted ${n}`);
    if (!column || values?.every((v) => v === null)) return rows.map((r) => r.id);
    // Matched back to the values they were given (RETURNING promises no order).
    const byValue = new Map(rows.map((r) => [r.v, r.id]));
    return (values as number[]).map((v) => byValue.get(v)!);
  }

  /** The key (and Forum-Api-User header) an actor uses with the given scopes; minted once per actor and scope list. */
  async credentials(actor: Actor, scopes: Scope[]): Promise<{ key: string; headers: Record<string, string> }> {
    const holder = actor === 'superAsUser' ? 'super' : actor;
    const id = `${holder} ${[...scopes].sort().join(',')}`;
    let key = this.keys.get(id);
    if (!key) {
      key =
        holder === 'guest'
          ? this.t.key('GUEST', scopes)
          : holder === 'super'
            ? this.t.key('SUPER', scopes)
            : this.t.key('USER', scopes, holder === 'user' ? this.users.alice : this.users[holder]);
      this.keys.set(id, key);
    }
    return { key: await key, headers: actor === 'superAsUser' ? { 'Forum-Api-User': String(this.users.alice) } : {} };
  }
}

const CREATE_DOWNLOAD = `mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId currentVersionId downloadState } } }`;
const CREATE_COMMENT = `mutation($i: CreateCommentInput!) { createComment(input: $i) { comment { commentId commentState } } }`;
