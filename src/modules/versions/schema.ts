// Versions: the releases of a download, to which files attach. Reads need mc_dm_download:read (and the right to
// view the download); writes need mc_dm_download:write and the right to edit the download (the rules of its files);
// a hard delete also mc_dm_download:delete_hard and hardDeleteAny.
import { LIMITS } from '../../config.js';
import type { Download, File, Version } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { listOf, pageArgs, firstArg, firstOf } from '../../graphql/pagination.js';
import { deletePayloadOf } from '../../graphql/payloads.js';
import { NodeRef, registerNode, unlessUnseen } from '../../graphql/node.js';
import { DownloadRef } from '../downloads/index.js';
import { FileRef, deps as fileDeps, fileVisibleTo } from '../files/index.js';
import DataLoader from 'dataloader';
import type { Context } from '../../graphql/context.js';
import * as versions from './rules.js';
import { checkUpdates, type UpdateCheck } from './updates.js';
import { resolveDependencies, type DependencyConflict, type DependencyResolution } from './resolve.js';
import { filesOfVersions, type VersionFile } from './store.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

export const VersionStateEnum = builder.enumType('VersionState', {
  description: 'Where a version stands.',
  values: {
    VISIBLE: { value: 'visible', description: 'A live version.' },
    DELETED: {
      value: 'deleted',
      description:
        'Soft-deleted by deleteVersion: kept with its files, left out of lists, shown only to visitors who may edit the download; restoreVersion brings it back.',
    },
  } as const,
});

export const VersionChannelEnum = builder.enumType('VersionChannel', {
  description: 'How stable a version is. Only RELEASE versions become the current version by themselves.',
  values: {
    RELEASE: { value: 'release', description: 'A stable release (the default).' },
    BETA: { value: 'beta', description: 'A beta: feature-complete, still being tested.' },
    ALPHA: { value: 'alpha', description: 'An alpha: early and unstable.' },
  } as const,
});

export const DependencyKindEnum = builder.enumType('DependencyKind', {
  description: 'What a dependency means for a version.',
  values: {
    REQUIRED: { value: 'required', description: 'Needed: resolution adds the newest matching version.' },
    OPTIONAL: { value: 'optional', description: 'Works with it, does not need it: resolution leaves it out.' },
    INCOMPATIBLE: {
      value: 'incompatible',
      description: 'Must not be installed together (in the range): resolution reports it as a conflict when it is.',
    },
    EMBEDDED: { value: 'embedded', description: 'Shipped inside this version already: resolution leaves it out.' },
  } as const,
});

const DependencyRef = builder.objectRef<versions.Dependency>('VersionDependency').implement({
  description: 'Another download a version needs, works with, or cannot run beside.',
  fields: (t) => ({
    downloadId: t.exposeInt('downloadId', { description: 'The download depended on.' }),
    versionRange: t.exposeString('versionRange', {
      description:
        'The versions of it that qualify: `*` (any, semver or not) or a semver range (`^1.2.0`, `>=1.0 <2`, `1.x || 2.x`); pre-releases count. Versions whose versionString is not semver match only `*`.',
    }),
    kind: t.field({
      type: DependencyKindEnum,
      description: 'REQUIRED, OPTIONAL, INCOMPATIBLE or EMBEDDED.',
      resolve: (d) => d.kind,
    }),
  }),
});

export const VersionRef = builder.prismaObject('Version', {
  interfaces: [NodeRef],
  description:
    'A release of a download; files attach to a version. Visible to whoever may view its download (a deleted one only to visitors who may edit it).',
  fields: (t) => ({
    versionId: t.exposeInt('id', {
      description: "The numeric version id (the REST API's `version_id`, `current_version_id`).",
    }),
    downloadId: t.exposeInt('downloadId', { description: 'The download this version belongs to.' }),
    versionString: t.exposeString('versionString', {
      description:
        'The version label, e.g. 1.2.0 (at most 50 characters); defaults to the UTC date of creation (2026-11-22). Empty in categories without versioning. Dependency ranges match it when it is semver.',
    }),
    releaseDate: t.int({
      description: 'When the version was created, in Unix seconds. "Newest" means the latest releaseDate (ties: id).',
      resolve: (v) => unix(v.releaseDate),
    }),
    downloadCount: t.exposeInt('downloadCount', {
      description: 'Times a file of this version was downloaded (requests from byte 0 count).',
    }),
    versionState: t.expose('state', { type: VersionStateEnum, description: 'VISIBLE or DELETED.' }),
    channel: t.expose('channel', { type: VersionChannelEnum, description: 'RELEASE, BETA or ALPHA.' }),
    changelog: t.exposeString('changelog', {
      description: `What changed, in BB code (at most ${LIMITS.maxChangelog} characters); empty when none.`,
    }),
    compatibleWith: t.exposeStringList('compatibleWith', {
      description: `What it runs on: game or platform versions, loaders (at most ${LIMITS.maxCompatibleWith} entries of at most ${LIMITS.maxCompatibleLength} characters).`,
    }),
    dependencies: t.field({
      type: [DependencyRef],
      description: `Other downloads it needs, works with or cannot run beside (at most ${LIMITS.maxDependencies}).`,
      resolve: (v) => versions.dependenciesOf(v),
    }),
    download: t.relation('download', { description: 'The download this version belongs to.' }),
    fileList: t.field({
      type: [FileRef],
      description:
        "Its files as a plain list, the primary file first, then by displayOrder (the REST `Files`). Soft-deleted files are left out; failed ones are shown only to visitors who may manage the download's files. `files` pages through them.",
      args: { first: firstArg(t.arg, 'files') },
      authScopes: { scope: READ },
      resolve: async (v, args, ctx) => {
        const rows = await filesOf(ctx, firstOf(args.first)).load(v.id);
        const d = fileDeps(ctx, await ctx.access());
        const out: File[] = [];
        for (const { file, versionState, download } of rows)
          if (await fileVisibleTo(d, { ...file, version: { state: versionState } as Version }, download))
            out.push(file);
        return out;
      },
    }),
  }),
});

const fileLoaders = new WeakMap<object, Map<number, DataLoader<number, VersionFile[]>>>();

/**
 * The first `first` files of each version resolved in the same turn (one statement for all of them: an update check
 * answers up to 500 versions with their files), per request, uncached (a later mutation must not see an old list).
 */
function filesOf(ctx: Context, first: number): DataLoader<number, VersionFile[]> {
  let byFirst = fileLoaders.get(ctx);
  if (!byFirst) {
    byFirst = new Map();
    fileLoaders.set(ctx, byFirst);
  }
  let l = byFirst.get(first);
  if (!l) {
    l = new DataLoader<number, VersionFile[]>(
      async (ids) => {
        const by = new Map<number, VersionFile[]>();
        for (const row of await filesOfVersions(ctx.db, ids, first)) {
          const list = by.get(row.file.versionId) ?? [];
          list.push(row);
          by.set(row.file.versionId, list);
        }
        return ids.map((id) => by.get(id) ?? []);
      },
      { batchScheduleFn: (run) => setImmediate(run), cache: false },
    );
    byFirst.set(first, l);
  }
  return l;
}

const ConflictReasonEnum = builder.enumType('DependencyConflictReason', {
  description: 'Why a dependency could not be met.',
  values: {
    UNSATISFIABLE: {
      value: 'unsatisfiable',
      description: 'No visible version of the download matches the range (and the compatibleWith asked for).',
    },
    UNAVAILABLE: {
      value: 'unavailable',
      description: 'The download does not exist, or the visitor may not view it or download from it.',
    },
    VERSION_CONFLICT: {
      value: 'version_conflict',
      description: 'The version resolved for another dependent of the same download is outside this range.',
    },
    INCOMPATIBLE: {
      value: 'incompatible',
      description: 'An INCOMPATIBLE dependency: the resolved set (the root included) holds a version in its range.',
    },
    DEPTH_LIMIT: {
      value: 'depth_limit',
      description: `Not followed: more than ${LIMITS.maxResolveDepth} levels below the root.`,
    },
    SIZE_LIMIT: {
      value: 'size_limit',
      description: `Not followed: ${LIMITS.maxResolvedVersions} versions were resolved already.`,
    },
  } as const,
});

const ConflictRef = builder.objectRef<DependencyConflict>('DependencyConflict').implement({
  description: 'A dependency the resolution could not meet.',
  fields: (t) => ({
    versionId: t.exposeInt('versionId', { description: 'The version that declares the dependency.' }),
    downloadId: t.exposeInt('downloadId', { description: 'The download depended on.' }),
    versionRange: t.exposeString('versionRange', { description: 'The range asked for.' }),
    reason: t.field({ type: ConflictReasonEnum, description: 'Why it is not met.', resolve: (c) => c.reason }),
  }),
});

const ResolutionRef = builder.objectRef<DependencyResolution>('DependencyResolution').implement({
  description: `What a version needs, transitively: at most ${LIMITS.maxResolvedVersions} versions, ${LIMITS.maxResolveDepth} levels deep; what is past a bound is reported as a conflict.`,
  fields: (t) => ({
    versions: t.field({
      type: [VersionRef],
      description:
        'The versions needed (REQUIRED dependencies, followed transitively), the root not included: for each download the version preferred among those that match every range met (RELEASE before BETA before ALPHA, then newest) and that the visitor may download.',
      resolve: (r) => r.versions,
    }),
    conflicts: t.field({
      type: [ConflictRef],
      description: `Dependencies not met, at most ${LIMITS.maxResolveConflicts}.`,
      resolve: (r) => r.conflicts,
    }),
    cycles: t.field({
      type: t.listRef(t.listRef('Int')),
      description: `Required dependencies that lead back to a version on their own path, each as the version ids from the one depended on down to the one depending on it (at most ${LIMITS.maxResolveCycles} cycles of at most ${LIMITS.maxResolveDepth + 1} ids). They are followed once, never looped.`,
      resolve: (r) => r.cycles,
    }),
  }),
});

const COMPAT_ARG = {
  required: false,
  description: `Only versions listing every one of these values in compatibleWith (at most ${LIMITS.maxCompatibleWith}).`,
} as const;

builder.prismaObjectFields(VersionRef, (t) => ({
  resolvedDependencies: t.field({
    type: ResolutionRef,
    description:
      'The versions this version needs, transitively, with the conflicts and cycles found. Needs mc_dm_download:read. Errors: invalid_input (compatibleWith).',
    authScopes: { scope: READ },
    args: { compatibleWith: t.arg.stringList(COMPAT_ARG) },
    resolve: async (v, args, ctx) =>
      resolveDependencies(ctx.db, await ctx.access(), v, versions.checkCompatibleWith(args.compatibleWith ?? [])),
  }),
}));

builder.prismaObjectFields(DownloadRef, (t) => ({
  currentVersionPinned: t.exposeBoolean('currentVersionPinned', {
    description:
      'true when an editor chose the current version (updateVersion current: true); false when it follows the newest visible RELEASE version by itself.',
  }),
}));

registerNode('Version', READ, async (ctx, id) =>
  versions.viewableVersion(ctx.prisma, await ctx.access(), ctx.team, id),
);

const VersionList = listOf<Version>('Version', VersionRef);

builder.queryFields((t) => ({
  versions: t.field({
    nullable: true,
    type: VersionList,
    description:
      'Visible versions of a download, newest first (release date, then id), one page at a time. Needs mc_dm_download:read and the view permission on the download. downloadId is required (required_input_missing) except with super-user keys. Deleted versions are never listed. Errors: mc_dm_api_error.download_not_found, do_not_have_permission, invalid_input.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      downloadId: t.arg.int({ required: false, description: 'The download whose versions to list.' }),
      channel: t.arg({ type: VersionChannelEnum, required: false, description: 'Only versions of this channel.' }),
      compatibleWith: t.arg.stringList({
        required: false,
        description: `Only versions whose compatibleWith lists every one of these values (exactly, case-sensitive; at most ${LIMITS.maxCompatibleWith}). REST: repeat the field.`,
      }),
    },
    resolve: async (_r, args, ctx) => versions.listVersions(ctx.prisma, await ctx.access(), args),
  }),
  version: t.prismaField({
    type: 'Version',
    nullable: true,
    description:
      'One version. Needs mc_dm_download:read and the view permission on its download (else do_not_have_permission). Unknown ids, and deleted versions the visitor may not edit, answer mc_dm_api_error.version_not_found.',
    authScopes: { scope: READ },
    args: { versionId: t.arg.int({ required: true, description: 'The numeric version id.' }) },
    resolve: async (query, _r, args, ctx) =>
      versions.viewableVersion(ctx.prisma, await ctx.access(), ctx.team, args.versionId, query as object),
  }),
}));

const UpdateCheckRef = builder.objectRef<UpdateCheck>('UpdateCheck').implement({
  description: 'The answer of an update check for one hash: the version the file belongs to and the newest one.',
  fields: (t) => ({
    hash: t.exposeString('hash', { description: 'The hash as sent (trimmed).' }),
    current: t.field({
      type: VersionRef,
      description: 'The version of the file with this hash (the newest such file the visitor may view).',
      resolve: (u) => u.current,
    }),
    latest: t.field({
      type: VersionRef,
      nullable: true,
      description:
        'The newest visible version of the same download (release date, then id) of the channels asked for, listing every compatibleWith value asked for; it may be `current` itself. Null when none matches.',
      resolve: (u) => u.latest,
    }),
  }),
});

builder.queryFields((t) => ({
  updates: t.field({
    type: [UpdateCheckRef],
    description: `The update check of a launcher: for each hash of a file it holds, that file's version and the newest version of the same download matching the filters. Each hash is \`sha1:<hex>\`, \`sha256:<hex>\` or \`sha512:<hex>\` (as \`filesByHash\`); at most ${LIMITS.maxUpdateHashes}; repeats answer once. Unknown hashes, and files the visitor may not view, are simply absent. Needs mc_dm_download:read. Errors: required_input_missing (no hash), invalid_input (a malformed hash, more than ${LIMITS.maxUpdateHashes}, a bad compatibleWith).`,
    authScopes: { scope: READ },
    args: {
      hashes: t.arg.stringList({ required: true, description: 'The hashes of the files the launcher holds.' }),
      channel: t.arg({
        type: VersionChannelEnum,
        required: false,
        description:
          'The least stable channel the launcher takes: RELEASE (releases only), BETA (betas and releases), ALPHA (any). Omitted: any channel.',
      }),
      compatibleWith: t.arg.stringList({
        required: false,
        description: `Only versions listing every one of these values in compatibleWith (at most ${LIMITS.maxCompatibleWith}).`,
      }),
    },
    resolve: async (_r, args, ctx) => checkUpdates(fileDeps(ctx, await ctx.access()), args),
  }),
}));

builder.queryFields((t) => ({
  resolveDependencies: t.field({
    type: ResolutionRef,
    nullable: true,
    description:
      'The versions a version needs, transitively (as Version.resolvedDependencies). Needs mc_dm_download:read and the view permission on its download. Errors: mc_dm_api_error.version_not_found, do_not_have_permission, invalid_input (compatibleWith).',
    authScopes: { scope: READ },
    args: {
      versionId: t.arg.int({ required: true, description: 'The version whose dependencies to resolve.' }),
      compatibleWith: t.arg.stringList(COMPAT_ARG),
    },
    resolve: async (_r, args, ctx) => {
      const access = await ctx.access();
      const compat = versions.checkCompatibleWith(args.compatibleWith ?? []);
      const root = await versions.viewableVersion(ctx.prisma, access, ctx.team, args.versionId);
      return resolveDependencies(ctx.db, access, root, compat);
    },
  }),
}));

const DependencyInput = builder.inputType('VersionDependencyInput', {
  description: 'A dependency of a version.',
  fields: (t) => ({
    downloadId: t.int({
      required: true,
      description:
        'The download depended on: it must exist, the visitor must be able to view it, and it cannot be the version’s own download (invalid_input).',
    }),
    versionRange: t.string({
      required: false,
      description: 'A semver range, or `*` (the default): any version. Not a valid range: invalid_input.',
    }),
    kind: t.field({ type: DependencyKindEnum, required: false, description: 'Default REQUIRED.' }),
  }),
});

const CreateVersionInput = builder.inputType('CreateVersionInput', {
  description: 'A new version of a download.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download that gets the version.' }),
    versionString: t.string({
      required: false,
      description: "The version label, at most 50 characters; defaults to today's UTC date (Y-m-d).",
    }),
    channel: t.field({ type: VersionChannelEnum, required: false, description: 'Default RELEASE.' }),
    changelog: t.string({
      required: false,
      description: `What changed, in BB code, at most ${LIMITS.maxChangelog} characters.`,
    }),
    compatibleWith: t.stringList({
      required: false,
      description: `What it runs on, at most ${LIMITS.maxCompatibleWith} entries of 1 to ${LIMITS.maxCompatibleLength} characters (trimmed; repeats dropped).`,
    }),
    dependencies: t.field({
      type: [DependencyInput],
      required: false,
      description: `At most ${LIMITS.maxDependencies}, each download once. In a REST body, send JSON.`,
    }),
  }),
});

const UpdateVersionInput = builder.inputType('UpdateVersionInput', {
  description: 'Changes to a version; omitted fields are kept, a list sent replaces the stored one.',
  fields: (t) => ({
    versionId: t.int({ required: true, description: 'The version to change.' }),
    versionString: t.string({ required: false, description: 'The version label, at most 50 characters.' }),
    channel: t.field({ type: VersionChannelEnum, required: false, description: 'Default RELEASE.' }),
    changelog: t.string({
      required: false,
      description: `What changed, in BB code, at most ${LIMITS.maxChangelog} characters.`,
    }),
    compatibleWith: t.stringList({
      required: false,
      description: `What it runs on, at most ${LIMITS.maxCompatibleWith} entries of 1 to ${LIMITS.maxCompatibleLength} characters (trimmed; repeats dropped).`,
    }),
    dependencies: t.field({
      type: [DependencyInput],
      required: false,
      description: `At most ${LIMITS.maxDependencies}, each download once. In a REST body, send JSON.`,
    }),
    current: t.boolean({
      required: false,
      description:
        "true: make it the download's current version and keep it so (pinned) until unpinned, deleted, or another is pinned; a deleted version cannot be (invalid_input). false: unpin, so that the current version follows the newest visible RELEASE version again.",
    }),
  }),
});

const DeleteVersionInput = builder.inputType('DeleteVersionInput', {
  description: 'Which version to delete, and how.',
  fields: (t) => ({
    versionId: t.int({ required: true, description: 'The version to delete.' }),
    hard: t.boolean({
      required: false,
      description:
        'true: remove the version with its files and their stored bytes (needs mc_dm_download:delete_hard and hardDeleteAny). Default: soft delete.',
    }),
  }),
});

const RestoreVersionInput = builder.inputType('RestoreVersionInput', {
  description: 'The soft-deleted version to bring back.',
  fields: (t) => ({ versionId: t.int({ required: true, description: 'The version to restore.' }) }),
});

const versionPayload = (name: string, what: string) =>
  builder.objectRef<{ version: Version; download: Download }>(name).implement({
    description: `What \`${what}\` returns: the version and its download.`,
    fields: (t) => ({
      version: t.field({ type: VersionRef, description: 'The version as it is now.', resolve: (p) => p.version }),
      download: t.field({
        type: DownloadRef,
        description: 'The download, with its current version as it is now.',
        resolve: (p) => p.download,
      }),
    }),
  });
const CreateVersionPayload = versionPayload('CreateVersionPayload', 'createVersion');
const UpdateVersionPayload = versionPayload('UpdateVersionPayload', 'updateVersion');
const RestoreVersionPayload = versionPayload('RestoreVersionPayload', 'restoreVersion');
const DeleteVersionPayload = deletePayloadOf<Version>('DeleteVersionPayload', 'version', VersionRef);

const ERRORS =
  'mc_dm_api_error.version_not_found, invalid_input (params.field names the value), do_not_have_permission';

builder.mutationFields((t) => ({
  createVersion: t.field({
    nullable: true,
    description: `Adds a version. A RELEASE becomes the download's current version (unless an editor pinned one); BETA and ALPHA do not. Needs mc_dm_download:write and canEdit. Errors: mc_dm_api_error.versioning_disabled (the category does not use versioning), mc_dm_api_error.download_not_found, invalid_input (a channel, range, compatibleWith entry or dependency that is not allowed), do_not_have_permission.`,
    type: CreateVersionPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({ type: CreateVersionInput, required: true, description: 'The download and the version.' }),
    },
    resolve: async (_r, { input }, ctx) =>
      ctx.events.versionCreated(
        await versions.createVersion(ctx.prisma, await ctx.access(), ctx.team, dependencyInput(input)),
      ),
  }),
  updateVersion: t.field({
    nullable: true,
    description: `Changes a version, or pins it as the current version (current). The current version is settled again after the change (a release moved to BETA stops being current unless pinned). Needs mc_dm_download:write and canEdit. Errors: ${ERRORS}.`,
    type: UpdateVersionPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateVersionInput, required: true, description: 'The version and the changes.' }) },
    resolve: async (_r, { input }, ctx) => {
      const result = await versions.updateVersion(ctx.prisma, await ctx.access(), ctx.team, dependencyInput(input));
      ctx.events.downloadChanged(result.download);
      return result;
    },
  }),
  deleteVersion: t.field({
    nullable: true,
    description: `Deletes a version. Soft by default (state DELETED, files kept, restoreVersion undoes it); hard: true removes it with its files and their bytes, which needs the mc_dm_download:delete_hard scope and hardDeleteAny. Deleting the current version makes the newest remaining visible RELEASE current (none: currentVersionId 0). Needs mc_dm_download:write and canEdit. Errors: ${ERRORS}, api_scope_missing.`,
    type: DeleteVersionPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteVersionInput, required: true, description: 'The version, hard or soft.' }) },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      const { removedBlobs, download } = await versions.deleteVersion(ctx.prisma, access, ctx.team, input);
      await ctx.removeBlobs(removedBlobs);
      ctx.events.downloadChanged(download);
      const object = input.hard
        ? null
        : await unlessUnseen(versions.viewableVersion(ctx.prisma, access, ctx.team, input.versionId));
      return { success: true as const, typeName: 'Version', id: input.versionId, object };
    },
  }),
  restoreVersion: t.field({
    nullable: true,
    description: `Makes a soft-deleted version visible again; the current version is settled again. Needs mc_dm_download:write and canEdit. Errors: mc_dm_api_error.version_not_deleted, ${ERRORS}.`,
    type: RestoreVersionPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RestoreVersionInput, required: true, description: 'The version.' }) },
    resolve: async (_r, { input }, ctx) => {
      const result = await versions.restoreVersion(ctx.prisma, await ctx.access(), ctx.team, input.versionId);
      ctx.events.downloadChanged(result.download);
      return result;
    },
  }),
}));

/** GraphQL's optional dependency fields with their defaults (`*`, required). */
function dependencyInput<T extends { dependencies?: readonly DependencyArg[] | null }>(input: T) {
  return {
    ...input,
    dependencies: input.dependencies?.map((d) => ({
      downloadId: d.downloadId,
      versionRange: d.versionRange ?? '*',
      kind: (d.kind ?? 'required') as versions.DependencyKind,
    })),
  };
}
type DependencyArg = { downloadId: number; versionRange?: string | null; kind?: string | null };
