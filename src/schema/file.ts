// File: an uploaded blob or an external link, attached to a version. Reads need mc_dm_download:read, writes
// mc_dm_download:write; a hard delete also mc_dm_download:delete_hard (checked in the domain).
// Uploads follow the GraphQL multipart request spec (graphql-upload-minimal, see http/uploads.ts).
import { queryFromInfo } from '@pothos/plugin-prisma';
import { GraphQLUpload, type FileUpload } from 'graphql-upload-minimal';
import type { File } from '../generated/prisma/client.js';
import { builder, unix } from './builder.js';
import { listOf, orderEnum, pageArgs } from './pagination.js';
import { payloadOf, SuccessPayload } from './payloads.js';
import { NodeRef, registerNode } from './node.js';
import type { Context } from './context.js';
import * as files from '../domain/files.js';
import { ingest, tooLarge, type Ingested } from '../files/ingest.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

builder.addScalarType('Upload', GraphQLUpload, {});

const ValidationStatusEnum = builder.enumType('ValidationStatus', {
  values: { PASSED: { value: 'passed' }, FAILED: { value: 'failed' }, PENDING: { value: 'pending' }, SKIPPED: { value: 'skipped' } } as const,
});

export const deps = (ctx: Context, access: files.FileDeps['access']): files.FileDeps => ({
  prisma: ctx.prisma, access, storage: ctx.storage, config: ctx.config, isTeamMember: (id) => ctx.team.isTeamMember(id),
});

export function fileDataUrl(baseUrl: string, f: Pick<File, 'id'>): string {
  return `${baseUrl}/api/mc-dm-files/${f.id}/data/`;
}

export const FileRef = builder.prismaObject('File', {
  interfaces: [NodeRef],
  fields: (t) => ({
    fileId: t.exposeInt('id'),
    versionId: t.exposeInt('versionId'),
    filename: t.exposeString('filename'),
    displayLabel: t.exposeString('displayLabel'),
    fileSize: t.expose('fileSize', { type: 'Long', description: 'Bytes.' }),
    fileHash: t.exposeString('fileHash', { description: '`sha256:<hex>`; empty for link-only files.' }),
    mimeType: t.exposeString('mimeType'),
    isPrimary: t.exposeBoolean('isPrimary'),
    isExternallyLinked: t.exposeBoolean('isExternallyLinked'),
    externalUrl: t.exposeString('externalUrl', { nullable: true }),
    validationStatus: t.expose('validationStatus', { type: ValidationStatusEnum }),
    displayOrder: t.exposeInt('displayOrder'),
    downloadCount: t.exposeInt('downloadCount'),
    displayName: t.string({ description: 'displayLabel, or filename when the label is empty.', resolve: (f) => f.displayLabel || f.filename }),
    isExternal: t.exposeBoolean('isExternallyLinked'),
    isLinkOnly: t.exposeBoolean('isLinkOnly'),
    externalSourceType: t.string({ nullable: true, description: 'The adapter that handled an external URL (direct-url).', resolve: (f) => f.externalSourceType }),
    isAvailable: t.exposeBoolean('isAvailable'),
    validationAttempts: t.exposeInt('validationAttempts'),
    validationError: t.exposeString('validationError', { nullable: true }),
    lastAttemptDate: t.int({ description: 'Unix seconds; 0 when never attempted.', resolve: (f) => unix(f.lastAttemptDate) }),
    isDeleted: t.exposeBoolean('isDeleted'),
    dataUrl: t.string({ description: 'Where the bytes are served (GET, mc_dm_download:read, canDownload).', resolve: (f, _a, ctx) => fileDataUrl(ctx.config.baseUrl, f) }),
    version: t.relation('version'),
  }),
});

registerNode('File', READ, async (ctx, id) => files.viewableFile(deps(ctx, await ctx.access()), id));

const FileOrderEnum = orderEnum('FileOrder', files.FILE_ORDERS);

const FileList = listOf<File>('File', FileRef);

builder.queryFields((t) => ({
  files: t.field({
    type: FileList,
    description: 'Files of a version (versionId is required except with super-user keys), default order DISPLAY_ORDER, DESC. Soft-deleted files are never listed.',
    authScopes: { scope: READ },
    args: { ...pageArgs(t.arg), order: t.arg({ type: FileOrderEnum, required: false }), versionId: t.arg.int({ required: false }) },
    resolve: async (_r, args, ctx, info) => files.listFiles(deps(ctx, await ctx.access()), args,
      queryFromInfo({ context: ctx, info, typeName: 'File', path: ['nodes'] }) as object),
  }),
  file: t.prismaField({
    type: 'File',
    nullable: true,
    authScopes: { scope: READ },
    args: { fileId: t.arg.int({ required: true }) },
    resolve: async (query, _r, args, ctx) => files.viewableFile(deps(ctx, await ctx.access()), args.fileId, query as object),
  }),
}));

const CreateFileInput = builder.inputType('CreateFileInput', {
  description: 'Exactly one of file (multipart upload) and externalUrl.',
  fields: (t) => ({
    versionId: t.int({ required: true }),
    file: t.field({ type: 'Upload', required: false }),
    externalUrl: t.string({ required: false, description: 'Probed by an external-URL adapter (direct-url).' }),
    linkOnly: t.boolean({ required: false, description: 'With externalUrl: store the link only, with no request.' }),
    keepFailed: t.boolean({ required: false, description: 'With externalUrl: keep a failed row when the URL cannot be fetched.' }),
    displayLabel: t.string({ required: false }),
    isPrimary: t.boolean({ required: false, description: 'Demotes the current primary file of the version.' }),
    displayOrder: t.int({ required: false }),
  }),
});
const UpdateFileInput = builder.inputType('UpdateFileInput', {
  description: 'Only metadata is editable; to replace the bytes, delete the file and create a new one.',
  fields: (t) => ({
    fileId: t.int({ required: true }),
    displayLabel: t.string({ required: false }),
    isPrimary: t.boolean({ required: false }),
    displayOrder: t.int({ required: false }),
  }),
});
const DeleteFileInput = builder.inputType('DeleteFileInput', {
  fields: (t) => ({
    fileId: t.int({ required: true }),
    hard: t.boolean({ required: false, description: 'true: remove the row and its blob (needs mc_dm_download:delete_hard). Default: soft delete.' }),
  }),
});

const CreateFilePayload = payloadOf<File>('CreateFilePayload', 'file', FileRef);
const UpdateFilePayload = payloadOf<File>('UpdateFilePayload', 'file', FileRef);

/**
 * An Upload from either face (the scalar hands resolvers the upload's promise). The REST adapter has already
 * streamed the bytes to a temporary file (`ingested`); a /graphql upload is streamed here.
 */
async function incoming(upload: Promise<FileUpload & { ingested?: Ingested }>): Promise<files.IncomingFile> {
  const u = await upload;
  return {
    filename: u.filename,
    async ingest(tmpDir, max) {
      if (u.ingested) return u.ingested;
      try {
        return await ingest(u.createReadStream(), tmpDir, max);
      } catch (err) {
        // graphql-upload-minimal ends an over-limit stream with an HTTP 413 error of its own.
        if ((err as { status?: number }).status === 413) throw tooLarge(max);
        throw err;
      }
    },
  };
}

builder.mutationFields((t) => ({
  createFile: t.field({
    type: CreateFilePayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateFileInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const file = input.file ? await incoming(input.file as any) : null;
      return { file: await files.createFile(deps(ctx, await ctx.access()), { ...input, file }) };
    },
  }),
  updateFile: t.field({
    type: UpdateFilePayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateFileInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ file: await files.updateFile(deps(ctx, await ctx.access()), input) }),
  }),
  deleteFile: t.field({
    type: SuccessPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteFileInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const { removedBlobs } = await files.deleteFile(deps(ctx, await ctx.access()), input);
      await ctx.removeBlobs(removedBlobs);
      return { success: true };
    },
  }),
}));
