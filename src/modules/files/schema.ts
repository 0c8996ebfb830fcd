// File: an uploaded blob or an external link, attached to a version. Reads need mc_dm_download:read, writes
// mc_dm_download:write; a hard delete also mc_dm_download:delete_hard (checked in the domain).
// Uploads follow the GraphQL multipart request spec (graphql-upload-minimal, see http/uploads.ts).
import { LIMITS } from '../../config.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { GraphQLUpload, type FileUpload } from 'graphql-upload-minimal';
import type { File } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { listOf, orderEnum, pageArgs } from '../../graphql/pagination.js';
import { deletePayloadOf, payloadOf } from '../../graphql/payloads.js';
import { NodeRef, registerNode, unlessUnseen } from '../../graphql/node.js';
import type { Context } from '../../graphql/context.js';
import * as files from './rules.js';
import { ingest, tooLarge, type Ingested } from '../../files/ingest.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

builder.addScalarType('Upload', GraphQLUpload, {});

const ValidationStatusEnum = builder.enumType('ValidationStatus', {
  description:
    'The outcome of the checks a new file goes through: size, hash, mime, magic-byte, file type and decompression bomb.',
  values: {
    PASSED: { value: 'passed', description: 'Every check accepted the bytes; the file is served.' },
    FAILED: {
      value: 'failed',
      description:
        "A check rejected the file, or its external URL could not be fetched (validationError says why). It is kept in quarantine for moderators, shown only to visitors who may manage the download's files, never served, and takes no place in the version's file limit.",
    },
    PENDING: {
      value: 'pending',
      description:
        'Not checked yet. Files created through this API are checked at once, so they do not stay in this state.',
    },
    SKIPPED: { value: 'skipped', description: 'Not checked: a link-only file, stored without fetching its URL.' },
  } as const,
});

export const deps = (ctx: Context, access: files.FileDeps['access']): files.FileDeps & { db: Context['db'] } => ({
  prisma: ctx.prisma,
  db: ctx.db,
  access,
  storage: ctx.storage,
  config: ctx.config,
  isTeamMember: (id) => ctx.team.isTeamMember(id),
});

export function fileDataUrl(baseUrl: string, f: Pick<File, 'id'>): string {
  return `${baseUrl}/api/mc-dm-files/${f.id}/data/`;
}

export const FileRef = builder.prismaObject('File', {
  description:
    "A file of a version: uploaded bytes kept in the service's storage, or an external URL (fetched and stored, or kept as a link only). Reading needs mc_dm_download:read and the view permission on its download; deleted and failed files are shown only to visitors who may manage the download's files.",
  interfaces: [NodeRef],
  fields: (t) => ({
    fileId: t.exposeInt('id', { description: "The numeric file id (the REST API's `file_id`)." }),
    versionId: t.exposeInt('versionId', { description: 'The version the file belongs to.' }),
    filename: t.exposeString('filename', {
      description:
        'The file name, from the upload or the URL, cleaned of paths and control characters (at most 200 characters); dataUrl serves the bytes under this name.',
    }),
    displayLabel: t.exposeString('displayLabel', {
      description: `A human label (at most ${LIMITS.maxFileLabel} characters); empty when none.`,
    }),
    fileSize: t.expose('fileSize', { type: 'Long', description: 'Size in bytes; 0 for link-only files.' }),
    fileHash: t.exposeString('fileHash', { description: '`sha256:<hex>`; empty for link-only files.' }),
    sha1: t.exposeString('sha1', {
      description:
        '`sha1:<hex>`, computed with fileHash; empty for link-only files (and older files until the backfill reaches them).',
    }),
    sha512: t.exposeString('sha512', {
      description:
        '`sha512:<hex>`, computed with fileHash; empty for link-only files (and older files until the backfill reaches them).',
    }),
    mimeType: t.exposeString('mimeType', {
      description:
        'The media type, detected from the bytes or else from the extension; application/octet-stream when unknown.',
    }),
    isPrimary: t.exposeBoolean('isPrimary', {
      description:
        "The version's main file: at most one per version. The first file of a version becomes primary unless created with isPrimary false.",
    }),
    isExternallyLinked: t.exposeBoolean('isExternallyLinked', {
      description: 'The file came from an external URL (fetched, or link-only).',
    }),
    externalUrl: t.exposeString('externalUrl', {
      nullable: true,
      description: 'The external URL it came from; null for uploads.',
    }),
    validationStatus: t.expose('validationStatus', {
      type: ValidationStatusEnum,
      description: 'PASSED, FAILED, PENDING or SKIPPED (link-only).',
    }),
    displayOrder: t.exposeInt('displayOrder', { description: 'Sort key for the DISPLAY_ORDER order; 0 or more.' }),
    downloadCount: t.exposeInt('downloadCount', {
      description:
        'Times its bytes were downloaded through dataUrl (requests from byte 0 count; a link-only file counts its redirect).',
    }),
    displayName: t.string({
      description: 'displayLabel, or filename when the label is empty.',
      resolve: (f) => f.displayLabel || f.filename,
    }),
    isExternal: t.exposeBoolean('isExternallyLinked', { description: 'The same as isExternallyLinked.' }),
    isLinkOnly: t.exposeBoolean('isLinkOnly', {
      description: 'Only the URL is stored: dataUrl redirects to it (302).',
    }),
    externalSourceType: t.string({
      nullable: true,
      description: 'The adapter that handled an external URL (direct-url).',
      resolve: (f) => f.externalSourceType,
    }),
    isAvailable: t.exposeBoolean('isAvailable', {
      description:
        'True when the stored bytes exist or the external URL is still reachable; rechecked about once a day.',
    }),
    validationAttempts: t.exposeInt('validationAttempts', {
      description: 'How many times the file was checked or its availability rechecked.',
    }),
    validationError: t.exposeString('validationError', {
      nullable: true,
      description: "Why the last check failed (the check's name and reason); null when it passed.",
    }),
    lastAttemptDate: t.int({
      description: 'Unix seconds; 0 when never attempted.',
      resolve: (f) => unix(f.lastAttemptDate),
    }),
    isDeleted: t.exposeBoolean('isDeleted', {
      description:
        "Soft-deleted: kept with its bytes, left out of lists and not served; shown only to visitors who may manage the download's files.",
    }),
    dataUrl: t.string({
      description:
        'Where the bytes are served: GET with the API key, needs mc_dm_download:read and canDownload; supports Range and ETag. A link-only file answers 302 to its URL; a failed file, mc_dm_api_error.file_not_available.',
      resolve: (f, _a, ctx) => fileDataUrl(ctx.config.baseUrl, f),
    }),
    version: t.relation('version', { description: 'The version the file belongs to.' }),
  }),
});

registerNode('File', READ, async (ctx, id) => files.readFile(deps(ctx, await ctx.access()), id));

export const FileOrderEnum = orderEnum('FileOrder', files.FILE_ORDERS, {
  description: 'How `files` is sorted; ties are broken by fileId in the same direction.',
  values: {
    display_order: 'By displayOrder (the default).',
    file_size: 'By fileSize in bytes.',
    download_count: 'By downloadCount.',
  },
});

const FileList = listOf<File>('File', FileRef);

builder.queryFields((t) => ({
  files: t.field({
    nullable: true,
    type: FileList,
    description:
      "Files of a version, one page at a time, default order DISPLAY_ORDER, DESC. Needs mc_dm_download:read and the view permission on the download. versionId is required (required_input_missing) except with super-user keys. Soft-deleted files are never listed; failed files only to visitors who may manage the download's files.",
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({ type: FileOrderEnum, required: false, description: 'Sort field (default DISPLAY_ORDER).' }),
      versionId: t.arg.int({
        required: false,
        description:
          'The version whose files to list; required except with super-user keys. Unknown: mc_dm_api_error.version_not_found.',
      }),
      hash: t.arg.stringList({
        required: false,
        description: `Instead of versionId: the files with any of these hashes (as \`filesByHash\`, up to ${LIMITS.maxHashes}), paged.`,
      }),
    },
    resolve: async (_r, args, ctx, info) => {
      const query = queryFromInfo({ context: ctx, info, typeName: 'File', path: ['nodes'] }) as object;
      if (args.hash == null) return files.listFiles(deps(ctx, await ctx.access()), args, query);
      return files.pageOf(await files.filesByHash(deps(ctx, await ctx.access()), args.hash, query), args);
    },
  }),
  filesByHash: t.prismaField({
    type: ['File'],
    description: `The files with any of these hashes that the visitor may view, newest first: launchers identify installed files this way. Each hash is \`sha1:<hex>\`, \`sha256:<hex>\` (as \`fileHash\`) or \`sha512:<hex>\`; unknown hashes are simply absent. At most ${LIMITS.maxHashes} hashes, and ${LIMITS.maxHashes} files answered. Needs mc_dm_download:read. Errors: invalid_input (a malformed hash, named; more than ${LIMITS.maxHashes}), required_input_missing (no hash).`,
    authScopes: { scope: READ },
    args: {
      hashes: t.arg.stringList({
        required: true,
        description: 'sha1:, sha256: or sha512: followed by the hex digest.',
      }),
    },
    resolve: async (query, _r, args, ctx) =>
      files.filesByHash(deps(ctx, await ctx.access()), args.hashes, query as object),
  }),
  file: t.prismaField({
    type: 'File',
    nullable: true,
    description:
      'One file. Needs mc_dm_download:read and the view permission on its download (else do_not_have_permission). Unknown ids, and deleted or failed files the visitor may not manage, answer mc_dm_api_error.file_not_found.',
    authScopes: { scope: READ },
    args: { fileId: t.arg.int({ required: true, description: 'The numeric file id.' }) },
    resolve: async (query, _r, args, ctx) =>
      files.readFile(deps(ctx, await ctx.access()), args.fileId, query as object),
  }),
}));

const CreateFileInput = builder.inputType('CreateFileInput', {
  description: 'Exactly one of file (multipart upload) and externalUrl.',
  fields: (t) => ({
    versionId: t.int({ required: true, description: 'The version to add the file to.' }),
    file: t.field({
      type: 'Upload',
      required: false,
      description:
        "The bytes, as a multipart upload (GraphQL multipart request). Larger than the server's upload limit: mc_dm_api_error.upload_exceeds_php_limit.",
    }),
    externalUrl: t.string({
      required: false,
      description:
        'An http(s) URL to fetch and store (or, with linkOnly, to link). URLs the service may not fetch (private addresses, other schemes) answer mc_dm_api_error.external_url_forbidden; a fetch that fails, mc_dm_api_error.external_url_unreachable.',
    }),
    keepFailed: t.boolean({
      required: false,
      description:
        'With externalUrl: keep a failed row (validationStatus FAILED) when the URL cannot be fetched. Default false: a failed fetch answers mc_dm_api_error.external_url_unreachable and stores nothing.',
    }),
    linkOnly: t.boolean({
      required: false,
      description:
        'With externalUrl: store the link only, with no request (validationStatus SKIPPED). Default false: fetch and store the bytes.',
    }),
    displayLabel: t.string({
      required: false,
      description: `A human label, at most ${LIMITS.maxFileLabel} characters.`,
    }),
    isPrimary: t.boolean({
      required: false,
      description:
        'true: make it the primary file, demoting the current one. Omitted: primary only when the version has none. false: never primary.',
    }),
    displayOrder: t.int({ required: false, description: 'Sort key, 0 or more (default 0).' }),
  }),
});
const UpdateFileInput = builder.inputType('UpdateFileInput', {
  description: 'Only metadata is editable; to replace the bytes, delete the file and create a new one.',
  fields: (t) => ({
    fileId: t.int({ required: true, description: 'The file to change.' }),
    displayLabel: t.string({
      required: false,
      description: `A human label, at most ${LIMITS.maxFileLabel} characters; empty clears it.`,
    }),
    isPrimary: t.boolean({
      required: false,
      description:
        'true makes it the primary file and demotes the current one (a failed file cannot be primary: invalid_input); false unmarks it, leaving the version without a primary.',
    }),
    displayOrder: t.int({ required: false, description: 'Sort key, 0 or more.' }),
  }),
});
const DeleteFileInput = builder.inputType('DeleteFileInput', {
  description: 'Which file to delete, and how.',
  fields: (t) => ({
    fileId: t.int({ required: true, description: 'The file to delete.' }),
    hard: t.boolean({
      required: false,
      description: 'true: remove the row and its blob (needs mc_dm_download:delete_hard). Default: soft delete.',
    }),
  }),
});

const CreateFilePayload = payloadOf<File>('CreateFilePayload', 'file', FileRef);
const UpdateFilePayload = payloadOf<File>('UpdateFilePayload', 'file', FileRef);
const DeleteFilePayload = deletePayloadOf<File>('DeleteFilePayload', 'file', FileRef);

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
    nullable: true,
    description:
      "Adds a file to a version, from a multipart upload or an external URL. Needs mc_dm_download:write and canEdit on the download. The bytes go through the checks (size and the category's limits, hash, mime, magic-byte, allowed file types, decompression bomb); a rejection keeps a FAILED row for moderators and answers mc_dm_api_error.processor_rejected with params.processor, params.reason and params.file_id. The file count and the version and download byte limits are counted again as the row is written; a file that lost the room to a simultaneous upload is refused (too_many_files, or processor_rejected by size without params.file_id) and nothing of it is kept. A new file moves the download's lastUpdate. Errors also: mc_dm_api_error.upload_exclusive (both file and externalUrl), mc_dm_api_error.upload_required (neither), mc_dm_api_error.too_many_files, mc_dm_api_error.upload_exceeds_php_limit, mc_dm_api_error.external_url_forbidden, mc_dm_api_error.external_url_unreachable, mc_dm_api_error.version_not_found, do_not_have_permission.",
    type: CreateFilePayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({
        type: CreateFileInput,
        required: true,
        description: 'The version, the upload or URL, and the metadata.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const file = input.file ? await incoming(input.file as Parameters<typeof incoming>[0]) : null;
      const created = await files.createFile(deps(ctx, await ctx.access()), { ...input, file });
      ctx.events.written(); // file.added (and file.validated) are in the outbox
      return { file: created };
    },
  }),
  updateFile: t.field({
    nullable: true,
    description:
      "Changes a file's label, order or primary mark; omitted fields are kept. Needs mc_dm_download:write and canEdit on the download. Errors: mc_dm_api_error.file_not_found (also for a deleted file), invalid_input, do_not_have_permission.",
    type: UpdateFilePayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({ type: UpdateFileInput, required: true, description: 'The file and the metadata to change.' }),
    },
    resolve: async (_r, { input }, ctx) => ({ file: await files.updateFile(deps(ctx, await ctx.access()), input) }),
  }),
  deleteFile: t.field({
    nullable: true,
    description:
      'Deletes a file. Soft by default: isDeleted, bytes kept, no other file is made primary. With hard: true the row and its stored bytes are removed and, if it was primary, the next file by displayOrder becomes primary; that needs the mc_dm_download:delete_hard scope and hardDeleteAny too. Needs mc_dm_download:write and canEdit on the download. Errors: mc_dm_api_error.file_not_found, do_not_have_permission, api_scope_missing.',
    type: DeleteFilePayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteFileInput, required: true, description: 'The file, hard or soft.' }) },
    resolve: async (_r, { input }, ctx) => {
      const d = deps(ctx, await ctx.access());
      const { removedBlobs } = await files.deleteFile(d, input);
      await ctx.removeBlobs(removedBlobs);
      const object = input.hard ? null : await unlessUnseen(files.viewableFile(d, input.fileId));
      return { success: true as const, typeName: 'File', id: input.fileId, object };
    },
  }),
}));
