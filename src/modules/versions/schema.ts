// Versions: the releases of a download, to which files attach. Reads need mc_dm_download:read (and the right to
// view the download); adding one needs mc_dm_download:write and the right to edit the download.
import type { Download, Version } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { notFound } from '../../errors.js';
import { NodeRef, registerNode } from '../../graphql/node.js';
import { DownloadRef, viewableDownload } from '../downloads/index.js';
import * as versions from './rules.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

export const VersionStateEnum = builder.enumType('VersionState', {
  description: 'Where a version stands.',
  values: {
    VISIBLE: { value: 'visible', description: 'A live version (every version created through this API).' },
    DELETED: {
      value: 'deleted',
      description: 'Marked deleted. No mutation sets it yet; versions go away with their download.',
    },
  } as const,
});

export const VersionRef = builder.prismaObject('Version', {
  interfaces: [NodeRef],
  description: 'A release of a download; files attach to a version. Visible to whoever may view its download.',
  fields: (t) => ({
    versionId: t.exposeInt('id', {
      description: "The numeric version id (the REST API's `version_id`, `current_version_id`).",
    }),
    downloadId: t.exposeInt('downloadId', { description: 'The download this version belongs to.' }),
    versionString: t.exposeString('versionString', {
      description:
        'The version label, e.g. 1.2.0 (at most 50 characters); defaults to the UTC date of creation (2026-11-22). Empty in categories without versioning.',
    }),
    releaseDate: t.int({
      description: 'When the version was created, in Unix seconds.',
      resolve: (v) => unix(v.releaseDate),
    }),
    downloadCount: t.exposeInt('downloadCount', {
      description: 'Times a file of this version was downloaded (requests from byte 0 count).',
    }),
    versionState: t.expose('state', { type: VersionStateEnum, description: 'VISIBLE or DELETED.' }),
    download: t.relation('download', { description: 'The download this version belongs to.' }),
  }),
});

registerNode('Version', READ, async (ctx, id) => {
  const v = await ctx.prisma.version.findUnique({ where: { id } });
  if (!v) throw notFound('version', id);
  await viewableDownload(ctx.prisma, await ctx.access(), v.downloadId);
  return v;
});

const CreateVersionInput = builder.inputType('CreateVersionInput', {
  description: 'A new version of a download.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download that gets the version.' }),
    versionString: t.string({
      required: false,
      description: "The version label, at most 50 characters; defaults to today's UTC date (Y-m-d).",
    }),
  }),
});
const CreateVersionPayload = builder
  .objectRef<{ version: Version; download: Download }>('CreateVersionPayload')
  .implement({
    description: 'What `createVersion` returns: the new version and its download.',
    fields: (t) => ({
      version: t.field({ type: VersionRef, description: 'The new version.', resolve: (p) => p.version }),
      download: t.field({
        type: DownloadRef,
        description: 'The download, whose currentVersion is now the new version and whose lastUpdate moved.',
        resolve: (p) => p.download,
      }),
    }),
  });

builder.mutationFields((t) => ({
  createVersion: t.field({
    nullable: true,
    description:
      "Adds a version, which becomes the download's current version. Needs mc_dm_download:write and canEdit. Errors: mc_dm_api_error.versioning_disabled (the category does not use versioning), mc_dm_api_error.download_not_found, invalid_input, do_not_have_permission.",
    type: CreateVersionPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({ type: CreateVersionInput, required: true, description: 'The download and the version label.' }),
    },
    resolve: async (_r, { input }, ctx) =>
      ctx.events.versionCreated(await versions.createVersion(ctx.prisma, await ctx.access(), ctx.team, input)),
  }),
}));
