// Download. Reads need mc_dm_download:read; writes mc_dm_download:write; a hard delete also
// mc_dm_download:delete_hard (checked in the domain, since it depends on the `hard` input).
import { LIMITS } from '../../config.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Download } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { firstArg, firstOf, listOf, orderEnum, pageArgs } from '../../graphql/pagination.js';
import { deletePayloadOf, modelPayloadOf, okPayloadOf } from '../../graphql/payloads.js';
import { NodeRef, registerNode, unlessUnseen } from '../../graphql/node.js';
import { selectedFields } from '../../graphql/selected-fields.js';
import { UserRef } from '../accounts/index.js';
import * as downloads from './rules.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

export const DownloadStateEnum = builder.enumType('DownloadState', {
  description:
    'Where a download stands. Super-user keys see downloads in every state; anyone else also needs the view permission in its category.',
  values: {
    VISIBLE: { value: 'visible', description: 'Public: shown to everyone with the view permission.' },
    MODERATED: {
      value: 'moderated',
      description:
        'Awaiting approval (created where the category requires approval, by an owner without bypassApproval): shown only to its owner and to holders of viewModerated.',
    },
    DELETED: {
      value: 'deleted',
      description:
        'Soft-deleted: shown only to holders of viewDeleted; restoreDownload brings it back, and it is purged for good after the retention window (30 days by default).',
    },
    DRAFT: { value: 'draft', description: 'Unpublished: shown only to its owner.' },
  } as const,
});
export function downloadUrl(baseUrl: string, d: Pick<Download, 'id'>): string {
  return `${baseUrl}/downloads/${d.id}/`;
}

export const DownloadRef = builder.prismaObject('Download', {
  interfaces: [NodeRef],
  description:
    'The releasable unit: owns versions, files, comments and a team. Reading one needs mc_dm_download:read and the view permission in its category; moderated, deleted and draft downloads are shown as DownloadState says.',
  fields: (t) => ({
    downloadId: t.exposeInt('id', { description: "The numeric download id (the REST API's `download_id`)." }),
    categoryId: t.exposeInt('categoryId', { description: 'The category it is listed in.' }),
    userId: t.exposeInt('userId', { description: "The owner's user id." }),
    title: t.exposeString('title', { description: 'The title (1 to 100 characters).' }),
    tagLine: t.exposeString('tagLine', {
      description: `A short tagline (at most ${LIMITS.maxTagLine} characters); empty when none.`,
    }),
    description: t.exposeString('description', {
      description: 'The long description, as written (BB code permitted; not rendered).',
    }),
    viewUrl: t.string({
      description: 'The public URL of the download page on the forum.',
      resolve: (d, _a, ctx) => downloadUrl(ctx.config.baseUrl, d),
    }),
    iconUrl: t.exposeString('iconUrl', { description: "URL of the download's icon; empty when it has none." }),
    coverUrl: t.exposeString('coverUrl', {
      nullable: true,
      description: 'URL of the cover image; null when it has none.',
    }),
    ratingAvg: t.exposeFloat('ratingAvg', {
      description:
        'The average rating of its visible reviews; 0 when unrated. Changes with them (createReview and the others).',
    }),
    ratingCount: t.exposeInt('ratingCount', {
      description: 'How many visible reviews ratingAvg is made of.',
    }),
    reviewCount: t.exposeInt('reviewCount', {
      description: 'How many of its visible reviews have a message.',
    }),
    downloadCount: t.exposeInt('downloadCount', {
      description:
        'Times one of its files was downloaded (requests from byte 0 count; a link-only file counts its redirect).',
    }),
    viewCount: t.exposeInt('viewCount', {
      description:
        'Reads of the download (the `download` query, REST get) by visitors other than its owner, once per visitor per 10 minutes; added in batches every 30 seconds.',
    }),
    lastUpdate: t.int({
      description: 'When it last changed (an edit, a new version or file), in Unix seconds.',
      resolve: (d) => unix(d.lastUpdate),
    }),
    createdDate: t.int({ description: 'When it was created, in Unix seconds.', resolve: (d) => unix(d.createdDate) }),
    downloadState: t.expose('state', {
      type: DownloadStateEnum,
      description: 'VISIBLE, MODERATED (awaiting approval), DELETED (soft-deleted) or DRAFT.',
    }),
    prefixId: t.int({ description: '0 when the download has no prefix.', resolve: (d) => d.prefixId ?? 0 }),
    currentVersionId: t.int({
      description:
        'The id of the current version: the newest visible RELEASE version, unless an editor pinned another (currentVersionPinned); 0 when none.',
      resolve: (d) => d.currentVersionId ?? 0,
    }),
    canView: t.boolean({
      description: 'Whether the visitor may view it (true for any download returned to them).',
      resolve: (d, _a, ctx) => ctx.withAccess((a) => a.canViewDownload(d)),
    }),
    canEdit: t.boolean({
      description:
        'Whether the visitor may edit it and manage its versions and files: editAny, or editOwn as its owner or a team member.',
      resolve: (d, _a, ctx) =>
        ctx.withAccess(
          (a) =>
            a.canEditDownload(d) ||
            (a.canViewDownload(d) && ctx.team.isTeamMember(d.id).then((member) => a.canEditDownload(d, member))),
        ),
    }),
    canDelete: t.boolean({
      description: 'Whether the visitor may soft-delete it: deleteAny, or deleteOwn as its owner.',
      resolve: (d, _a, ctx) => ctx.withAccess((a) => a.canDeleteDownload(d)),
    }),
    canHardDelete: t.boolean({
      description:
        'Whether the visitor may delete it permanently (hardDeleteAny); the key also needs mc_dm_download:delete_hard.',
      resolve: (d, _a, ctx) => ctx.withAccess((a) => a.canHardDeleteDownload(d)),
    }),
    canDownload: t.boolean({
      description: "Whether the visitor may fetch its files' bytes (File.dataUrl): the download permission.",
      resolve: (d, _a, ctx) => ctx.withAccess((a) => a.canDownload(d)),
    }),
    isVisible: t.boolean({ description: 'True when downloadState is VISIBLE.', resolve: (d) => d.state === 'visible' }),
    isPasswordProtected: t.exposeBoolean('isPasswordProtected', {
      description: 'The download is password-protected on the forum. No mutation of this API changes it.',
    }),
    category: t.relation('category', { description: 'The category the download is listed in.' }),
    owner: t.relation('user', { description: 'The user who owns the download (`userId`).' }),
    prefix: t.relation('prefix', { nullable: true, description: 'The title prefix; null when the download has none.' }),
    currentVersion: t.relation('currentVersion', {
      nullable: true,
      description: 'The current version (`currentVersionId`); null when none.',
    }),
    versions: t.relation('versions', {
      description:
        'Its visible versions, newest first: the first `first` of them (versionsConnection pages through them all).',
      args: { first: firstArg(t.arg, 'versions') },
      query: (args) => ({
        where: { state: 'visible' as const },
        orderBy: [{ releaseDate: 'desc' as const }, { id: 'desc' as const }],
        take: firstOf(args.first),
      }),
    }),
    tags: t.stringList({
      description: 'Its tags, lower case, sorted.',
      select: { tags: { select: { tag: { select: { name: true } } } } },
      resolve: (d) => d.tags.map((x) => x.tag.name).sort(),
    }),
  }),
});

registerNode('Download', READ, async (ctx, id) => downloads.readDownload(ctx, await ctx.access(), id));
export const DownloadOrderEnum = orderEnum('DownloadOrder', downloads.DOWNLOAD_LIST_ORDERS, {
  description:
    'How downloads are sorted; ties are broken by downloadId in the same direction. RELEVANCE and RATING sort a search (`downloads` with `q`) only.',
  values: {
    created_date: 'By createdDate.',
    last_update: 'By lastUpdate (the default without q).',
    download_count: 'By downloadCount.',
    view_count: 'By viewCount (not with q).',
    title: 'Alphabetically by title (not with q).',
    relevance:
      'Best match first, whatever the direction: the default of `downloads` with `q`, and only there (elsewhere invalid_input).',
    rating: 'By ratingAvg, then ratingCount: only `downloads` with `q` (elsewhere invalid_input).',
  },
});

export const DownloadList = listOf<Download>('Download', DownloadRef);

builder.queryFields((t) => ({
  downloads: t.field({
    nullable: true,
    type: DownloadList,
    description:
      'Downloads the visitor may view, one page at a time, default order LAST_UPDATE, DESC. Needs mc_dm_download:read. Only moderators, administrators and super-user keys list downloads that are not VISIBLE (and may filter by downloadState); others fetch their own moderated or draft downloads with `download`.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({
        type: DownloadOrderEnum,
        required: false,
        description: 'Sort field (default LAST_UPDATE; with q, RELEVANCE).',
      }),
      q: t.arg.string({
        required: false,
        description: `A search in web-search syntax, as \`search\` reads it ("phrase", -word, or; the last word also matches as a prefix; at most ${LIMITS.maxSearchQuery} characters and ${LIMITS.maxSearchTerms} words): the page then holds the downloads it finds, and pagination.total and \`facets\` count only downloads the visitor may view (owners also find their own moderated and draft downloads). Empty or blank: required_input_missing.`,
      }),
      categoryId: t.arg.int({
        required: false,
        description: 'Only downloads directly in this category (not its subcategories).',
      }),
      prefixId: t.arg.int({ required: false, description: '0 lists downloads without a prefix.' }),
      downloadState: t.arg({
        type: DownloadStateEnum,
        required: false,
        description:
          'Only downloads in this state. Moderators only: for anyone else the list is VISIBLE downloads whatever this says.',
      }),
      since: t.arg({
        type: 'DateTime',
        required: false,
        description: 'Only downloads updated at or after this moment.',
      }),
      updatedSince: t.arg({
        type: 'DateTime',
        required: false,
        description: 'The same as since (the name search filters use); when both are given, the later moment applies.',
      }),
      userId: t.arg.int({ required: false, description: 'Only downloads owned by this user.' }),
      tags: t.arg.stringList({
        required: false,
        description: `Only downloads carrying every one of these tags (compared as stored: trimmed, lower-cased; at most ${LIMITS.maxTags}).`,
      }),
    },
    resolve: async (_r, args, ctx, info) =>
      downloads.listDownloads(
        ctx,
        await ctx.access(),
        args,
        queryFromInfo({ context: ctx, info, typeName: 'Download', path: ['nodes'] }) as object,
        { facets: selectedFields(info, [])?.has('facets') ?? false },
      ),
  }),
  download: t.prismaField({
    type: 'Download',
    nullable: true,
    description:
      'One download. Needs mc_dm_download:read. Unknown ids answer mc_dm_api_error.download_not_found; downloads the visitor may not view, do_not_have_permission. Reading it counts a view (viewCount) when the visitor is not its owner, once per visitor per 10 minutes.',
    authScopes: { scope: READ },
    args: { downloadId: t.arg.int({ required: true, description: 'The numeric download id.' }) },
    resolve: async (query, _r, args, ctx) => {
      const d = await downloads.readDownload(ctx, await ctx.access(), args.downloadId, query as object);
      // A view: counted in memory, once per visitor per window, never the owner's (src/modules/downloads/views.ts).
      ctx.views?.record(ctx.visitor, d);
      return d;
    },
  }),
}));

const CreateDownloadInput = builder.inputType('CreateDownloadInput', {
  description: 'A new download, owned by the visitor, with its first version.',
  fields: (t) => ({
    categoryId: t.int({
      required: true,
      description: 'The category to list it in; the visitor needs the view and add permissions there.',
    }),
    title: t.string({ required: true, description: '1 to 100 characters.' }),
    tagLine: t.string({ required: false, description: `A short tagline, at most ${LIMITS.maxTagLine} characters.` }),
    description: t.string({ required: false, description: 'BB code permitted.' }),
    prefixId: t.int({
      required: false,
      description:
        'A prefix assigned to the category (else mc_dm_api_error.prefix_not_allowed); 0 or omitted for none.',
    }),
    tags: t.stringList({
      required: false,
      description: 'At most 20 tags of at most 50 characters; trimmed, lower-cased, duplicates dropped.',
    }),
    versionString: t.string({
      required: false,
      description: "On a versioning category it defaults to today's UTC date (Y-m-d).",
    }),
  }),
});

const UpdateDownloadInput = builder.inputType('UpdateDownloadInput', {
  description: 'Omitted fields are untouched; an empty string clears a text field; prefixId 0 clears the prefix.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download to change.' }),
    title: t.string({ required: false, description: '1 to 100 characters.' }),
    tagLine: t.string({ required: false, description: 'At most 100 characters; empty clears it.' }),
    description: t.string({
      required: false,
      description: 'The long description (BB code permitted); empty clears it.',
    }),
    prefixId: t.int({
      required: false,
      description:
        'A prefix assigned to the (new) category, or 0 to clear it. When the download moves and this is omitted, a prefix the new category does not offer is dropped.',
    }),
    categoryId: t.int({
      required: false,
      description: 'Moves the download: needs moveAny in its current category, and view and add in the new one.',
    }),
    tags: t.stringList({
      required: false,
      description: 'Replaces the tags (at most 20, each at most 50 characters); an empty list removes them all.',
    }),
  }),
});

const DeleteDownloadInput = builder.inputType('DeleteDownloadInput', {
  description: 'Which download to delete, and how.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download to delete.' }),
    hard: t.boolean({
      required: false,
      description: 'true: remove irreversibly (needs mc_dm_download:delete_hard). Default: soft delete.',
    }),
    reason: t.string({ required: false, description: 'Why, written to the audit log with the deletion.' }),
  }),
});

const DownloadIdInput = (name: string) =>
  builder.inputType(name, {
    description: 'Names one download.',
    fields: (t) => ({ downloadId: t.int({ required: true, description: 'The numeric download id.' }) }),
  });
const RestoreDownloadInput = DownloadIdInput('RestoreDownloadInput');
const TeamMemberInput = (name: string) =>
  builder.inputType(name, {
    description: 'A download and a user of its team.',
    fields: (t) => ({
      downloadId: t.int({ required: true, description: 'The download whose team changes.' }),
      userId: t.int({ required: true, description: 'The user to add or remove; not the owner.' }),
    }),
  });
const AddTeamMemberInput = TeamMemberInput('AddTeamMemberInput');
const RemoveTeamMemberInput = TeamMemberInput('RemoveTeamMemberInput');

const CreateDownloadPayload = modelPayloadOf('CreateDownloadPayload', 'download', 'Download', downloads.downloadWith);
const UpdateDownloadPayload = modelPayloadOf('UpdateDownloadPayload', 'download', 'Download', downloads.downloadWith);
const RestoreDownloadPayload = modelPayloadOf('RestoreDownloadPayload', 'download', 'Download', downloads.downloadWith);
const DeleteDownloadPayload = deletePayloadOf<Download>('DeleteDownloadPayload', 'download', DownloadRef);
const teamPayload = (name: string) =>
  okPayloadOf(name, {
    download: { type: DownloadRef, description: 'The download whose team changed.' },
    user: { type: UserRef, description: 'The user added to or removed from the team.' },
  });
const AddTeamMemberPayload = teamPayload('AddTeamMemberPayload');
const RemoveTeamMemberPayload = teamPayload('RemoveTeamMemberPayload');
builder.mutationFields((t) => ({
  createDownload: t.field({
    nullable: true,
    description:
      'Creates a download owned by the visitor, with its first version (currentVersionId). Needs mc_dm_download:write and the view and add permissions in the category; guests cannot own downloads. It starts VISIBLE, or MODERATED when the category requires approval and the visitor lacks bypassApproval. Errors: required_input_missing (title), invalid_input, mc_dm_api_error.category_not_found, mc_dm_api_error.prefix_not_found, mc_dm_api_error.prefix_not_allowed, do_not_have_permission.',
    type: CreateDownloadPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateDownloadInput, required: true, description: 'The new download.' }) },
    resolve: async (_r, { input }, ctx) => ({
      download: ctx.events.downloadCreated(await downloads.createDownload(ctx.prisma, await ctx.access(), input)),
    }),
  }),
  updateDownload: t.field({
    nullable: true,
    description:
      'Changes a download; omitted fields are kept, and a change moves lastUpdate. Needs mc_dm_download:write and canEdit; moving it also needs moveAny here and view and add in the target. Errors: mc_dm_api_error.download_not_found, mc_dm_api_error.category_not_found, mc_dm_api_error.prefix_not_found, mc_dm_api_error.prefix_not_allowed, invalid_input, do_not_have_permission.',
    type: UpdateDownloadPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({
        type: UpdateDownloadInput,
        required: true,
        description: 'The download and the fields to change.',
      }),
    },
    resolve: async (_r, { input }, ctx) => ({
      download: await ctx.events.downloadUpdated(
        Date.now(),
        downloads.updateDownload(ctx, await ctx.access(), ctx.team, input),
      ),
    }),
  }),
  deleteDownload: t.field({
    nullable: true,
    description:
      'Deletes a download. Soft by default: state DELETED, recoverable with restoreDownload until the retention window ends. With hard: true it is removed at once with its versions, files and comments, which also needs the mc_dm_download:delete_hard scope and hardDeleteAny. Needs mc_dm_download:write and canDelete; both kinds are written to the audit log with the reason. Errors: mc_dm_api_error.download_not_found, do_not_have_permission, api_scope_missing.',
    type: DeleteDownloadPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({
        type: DeleteDownloadInput,
        required: true,
        description: 'The download, hard or soft, and a reason.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      const { removedBlobs } = await downloads.deleteDownload(ctx.prisma, access, input);
      ctx.events.downloadChanged({ id: input.downloadId });
      await ctx.removeBlobs(removedBlobs);
      const object = input.hard ? null : await unlessUnseen(downloads.readDownload(ctx, access, input.downloadId));
      return { success: true as const, typeName: 'Download', id: input.downloadId, object };
    },
  }),
  restoreDownload: t.field({
    nullable: true,
    description:
      'Brings a soft-deleted download back to the state it had before. Needs mc_dm_download:write and the viewDeleted and deleteAny permissions (or a super-user key). Errors: mc_dm_api_error.download_not_deleted (it is not deleted), mc_dm_api_error.download_not_found, do_not_have_permission.',
    type: RestoreDownloadPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RestoreDownloadInput, required: true, description: 'The download to restore.' }) },
    resolve: async (_r, { input }, ctx) => ({
      download: ctx.events.downloadChanged(
        await downloads.restoreDownload(ctx.prisma, await ctx.access(), input.downloadId),
      ),
    }),
  }),
  addTeamMember: t.field({
    nullable: true,
    description:
      "Adds a user to a download's team; team members may edit the download with editOwn, as its owner does. Needs mc_dm_download:write, and to be the owner, an administrator, a super-user key or to hold editAny. Adding a member twice changes nothing. Errors: mc_dm_api_error.too_many_team_members (over the category's maxTeamMembers), invalid_input (the owner), mc_dm_api_error.user_not_found, mc_dm_api_error.download_not_found, do_not_have_permission.",
    type: AddTeamMemberPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({ type: AddTeamMemberInput, required: true, description: 'The download and the user to add.' }),
    },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      await downloads.addTeamMember(ctx.prisma, access, input.downloadId, input.userId);
      const [download, user] = await Promise.all([
        downloads.readDownload(ctx, access, input.downloadId),
        ctx.prisma.user.findUniqueOrThrow({ where: { id: input.userId } }),
      ]);
      return { ok: true as const, download, user };
    },
  }),
  removeTeamMember: t.field({
    nullable: true,
    description:
      "Removes a user from a download's team (a user not on it changes nothing). Needs mc_dm_download:write, and to be the owner, an administrator, a super-user key or to hold editAny. Errors: mc_dm_api_error.download_not_found, do_not_have_permission.",
    type: RemoveTeamMemberPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({
        type: RemoveTeamMemberInput,
        required: true,
        description: 'The download and the user to remove.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      await downloads.removeTeamMember(ctx.prisma, access, input.downloadId, input.userId);
      const [download, user] = await Promise.all([
        downloads.readDownload(ctx, access, input.downloadId),
        ctx.prisma.user.findUniqueOrThrow({ where: { id: input.userId } }),
      ]);
      return { ok: true as const, download, user };
    },
  }),
}));
