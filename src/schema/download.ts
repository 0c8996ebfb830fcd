// Download and Version. Reads need mc_dm_download:read; writes mc_dm_download:write; a hard delete also
// mc_dm_download:delete_hard (checked in the domain, since it depends on the `hard` input).
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Download, Version } from '../generated/prisma/client.js';
import { builder, unix } from './builder.js';
import { notFound } from '../errors.js';
import { listOf, orderEnum, pageArgs } from './pagination.js';
import { payloadOf, SuccessPayload, OkPayload } from './payloads.js';
import { NodeRef, registerNode } from './node.js';
import * as downloads from '../domain/downloads.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

export const DownloadStateEnum = builder.enumType('DownloadState', {
  values: { VISIBLE: { value: 'visible' }, MODERATED: { value: 'moderated' }, DELETED: { value: 'deleted' }, DRAFT: { value: 'draft' } } as const,
});
const VersionStateEnum = builder.enumType('VersionState', {
  values: { VISIBLE: { value: 'visible' }, DELETED: { value: 'deleted' } } as const,
});

export const VersionRef = builder.prismaObject('Version', {
  interfaces: [NodeRef],
  description: 'A release of a download; files attach to a version.',
  fields: (t) => ({
    versionId: t.exposeInt('id'),
    downloadId: t.exposeInt('downloadId'),
    versionString: t.exposeString('versionString'),
    releaseDate: t.int({ description: 'Unix seconds.', resolve: (v) => unix(v.releaseDate) }),
    downloadCount: t.exposeInt('downloadCount'),
    versionState: t.expose('state', { type: VersionStateEnum }),
  }),
});

export function downloadUrl(baseUrl: string, d: Pick<Download, 'id'>): string {
  return `${baseUrl}/downloads/${d.id}/`;
}

export const DownloadRef = builder.prismaObject('Download', {
  interfaces: [NodeRef],
  description: 'The releasable unit: owns versions, files, comments and a team.',
  fields: (t) => ({
    downloadId: t.exposeInt('id'),
    categoryId: t.exposeInt('categoryId'),
    userId: t.exposeInt('userId', { description: 'The owner.' }),
    title: t.exposeString('title'),
    tagLine: t.exposeString('tagLine'),
    description: t.exposeString('description', { description: 'BB code permitted.' }),
    viewUrl: t.string({ resolve: (d, _a, ctx) => downloadUrl(ctx.config.baseUrl, d) }),
    iconUrl: t.exposeString('iconUrl'),
    coverUrl: t.exposeString('coverUrl', { nullable: true }),
    ratingAvg: t.exposeFloat('ratingAvg'),
    ratingCount: t.exposeInt('ratingCount'),
    reviewCount: t.exposeInt('reviewCount'),
    downloadCount: t.exposeInt('downloadCount'),
    viewCount: t.exposeInt('viewCount'),
    lastUpdate: t.int({ description: 'Unix seconds.', resolve: (d) => unix(d.lastUpdate) }),
    createdDate: t.int({ description: 'Unix seconds.', resolve: (d) => unix(d.createdDate) }),
    downloadState: t.expose('state', { type: DownloadStateEnum }),
    prefixId: t.int({ description: '0 when the download has no prefix.', resolve: (d) => d.prefixId ?? 0 }),
    currentVersionId: t.int({ resolve: (d) => d.currentVersionId ?? 0 }),
    canView: t.boolean({ resolve: async (d, _a, ctx) => (await ctx.access()).canViewDownload(d) }),
    canEdit: t.boolean({ resolve: async (d, _a, ctx) => (await ctx.access()).canEditDownload(d, await ctx.team.isTeamMember(d.id)) }),
    canDelete: t.boolean({ resolve: async (d, _a, ctx) => (await ctx.access()).canDeleteDownload(d) }),
    canHardDelete: t.boolean({ resolve: async (d, _a, ctx) => (await ctx.access()).canHardDeleteDownload(d) }),
    canDownload: t.boolean({ resolve: async (d, _a, ctx) => (await ctx.access()).canDownload(d) }),
    isVisible: t.boolean({ resolve: (d) => d.state === 'visible' }),
    isPasswordProtected: t.exposeBoolean('isPasswordProtected'),
    category: t.relation('category'),
    currentVersion: t.relation('currentVersion', { nullable: true }),
    versions: t.relation('versions', { query: { orderBy: [{ releaseDate: 'desc' }, { id: 'desc' }] } }),
    tags: t.stringList({
      select: { tags: { select: { tag: { select: { name: true } } } } },
      resolve: (d) => d.tags.map((x) => x.tag.name).sort(),
    }),
  }),
});

registerNode('Download', READ, async (ctx, id) => downloads.readDownload(ctx, await ctx.access(), id));
registerNode('Version', READ, async (ctx, id) => {
  const v = await ctx.prisma.version.findUnique({ where: { id } });
  if (!v) throw notFound('version', id);
  await downloads.viewableDownload(ctx.prisma, await ctx.access(), v.downloadId);
  return v;
});

const DownloadOrderEnum = orderEnum('DownloadOrder', downloads.DOWNLOAD_ORDERS);

const DownloadList = listOf<Download>('Download', DownloadRef);

builder.queryFields((t) => ({
  downloads: t.field({
    type: DownloadList,
    description: 'Downloads the visitor may view (default order LAST_UPDATE, DESC). Visitors who are not moderators only list visible downloads.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({ type: DownloadOrderEnum, required: false }),
      categoryId: t.arg.int({ required: false }),
      prefixId: t.arg.int({ required: false, description: '0 lists downloads without a prefix.' }),
      downloadState: t.arg({ type: DownloadStateEnum, required: false }),
      since: t.arg({ type: 'DateTime', required: false, description: 'Only downloads updated at or after this moment.' }),
    },
    resolve: async (_r, args, ctx, info) => downloads.listDownloads(ctx, await ctx.access(), args,
      queryFromInfo({ context: ctx, info, typeName: 'Download', path: ['nodes'] }) as object),
  }),
  download: t.prismaField({
    type: 'Download',
    nullable: true,
    authScopes: { scope: READ },
    args: { downloadId: t.arg.int({ required: true }) },
    resolve: async (query, _r, args, ctx) => downloads.readDownload(ctx, await ctx.access(), args.downloadId, query as object),
  }),
}));

const CreateDownloadInput = builder.inputType('CreateDownloadInput', {
  fields: (t) => ({
    categoryId: t.int({ required: true }),
    title: t.string({ required: true }),
    tagLine: t.string({ required: false }),
    description: t.string({ required: false, description: 'BB code permitted.' }),
    prefixId: t.int({ required: false, description: 'A prefix assigned to the category.' }),
    tags: t.stringList({ required: false }),
    versionString: t.string({ required: false, description: "On a versioning category it defaults to today's UTC date (Y-m-d)." }),
  }),
});

const UpdateDownloadInput = builder.inputType('UpdateDownloadInput', {
  description: 'Omitted fields are untouched; an empty string clears a text field; prefixId 0 clears the prefix.',
  fields: (t) => ({
    downloadId: t.int({ required: true }),
    title: t.string({ required: false }),
    tagLine: t.string({ required: false }),
    description: t.string({ required: false }),
    prefixId: t.int({ required: false }),
    categoryId: t.int({ required: false, description: 'Moves the download (needs moveAny).' }),
    tags: t.stringList({ required: false, description: 'Replaces the tags.' }),
  }),
});

const DeleteDownloadInput = builder.inputType('DeleteDownloadInput', {
  fields: (t) => ({
    downloadId: t.int({ required: true }),
    hard: t.boolean({ required: false, description: 'true: remove irreversibly (needs mc_dm_download:delete_hard). Default: soft delete.' }),
    reason: t.string({ required: false, description: 'Written to the audit log.' }),
  }),
});

const DownloadIdInput = (name: string) => builder.inputType(name, { fields: (t) => ({ downloadId: t.int({ required: true }) }) });
const RestoreDownloadInput = DownloadIdInput('RestoreDownloadInput');
const CreateVersionInput = builder.inputType('CreateVersionInput', {
  fields: (t) => ({
    downloadId: t.int({ required: true }),
    versionString: t.string({ required: false, description: "Defaults to today's UTC date (Y-m-d)." }),
  }),
});
const TeamMemberInput = (name: string) => builder.inputType(name, {
  fields: (t) => ({ downloadId: t.int({ required: true }), userId: t.int({ required: true }) }),
});
const AddTeamMemberInput = TeamMemberInput('AddTeamMemberInput');
const RemoveTeamMemberInput = TeamMemberInput('RemoveTeamMemberInput');

const CreateDownloadPayload = payloadOf<Download>('CreateDownloadPayload', 'download', DownloadRef);
const UpdateDownloadPayload = payloadOf<Download>('UpdateDownloadPayload', 'download', DownloadRef);
const RestoreDownloadPayload = payloadOf<Download>('RestoreDownloadPayload', 'download', DownloadRef);
const CreateVersionPayload = builder.objectRef<{ version: Version; download: Download }>('CreateVersionPayload').implement({
  fields: (t) => ({
    version: t.field({ type: VersionRef, resolve: (p) => p.version }),
    download: t.field({ type: DownloadRef, resolve: (p) => p.download }),
  }),
});

builder.mutationFields((t) => ({
  createDownload: t.field({
    type: CreateDownloadPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateDownloadInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ download: ctx.events.downloadCreated(await downloads.createDownload(ctx.prisma, await ctx.access(), input)) }),
  }),
  updateDownload: t.field({
    type: UpdateDownloadPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateDownloadInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ download: await ctx.events.downloadUpdated(Date.now(), downloads.updateDownload(ctx.prisma, await ctx.access(), ctx.team, input)) }),
  }),
  deleteDownload: t.field({
    type: SuccessPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteDownloadInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const { removedBlobs } = await downloads.deleteDownload(ctx.prisma, await ctx.access(), input);
      ctx.events.downloadChanged({ id: input.downloadId });
      await ctx.removeBlobs(removedBlobs);
      return { success: true };
    },
  }),
  restoreDownload: t.field({
    type: RestoreDownloadPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RestoreDownloadInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ download: ctx.events.downloadChanged(await downloads.restoreDownload(ctx.prisma, await ctx.access(), input.downloadId)) }),
  }),
  createVersion: t.field({
    type: CreateVersionPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateVersionInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ctx.events.versionCreated(await downloads.createVersion(ctx.prisma, await ctx.access(), ctx.team, input)),
  }),
  addTeamMember: t.field({
    type: OkPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: AddTeamMemberInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await downloads.addTeamMember(ctx.prisma, await ctx.access(), input.downloadId, input.userId);
      return { ok: true };
    },
  }),
  removeTeamMember: t.field({
    type: OkPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RemoveTeamMemberInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await downloads.removeTeamMember(ctx.prisma, await ctx.access(), input.downloadId, input.userId);
      return { ok: true };
    },
  }),
}));

