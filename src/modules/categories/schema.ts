// Category: the tree that groups downloads. Queries need mc_dm_category:read; writes need
// mc_dm_category:write and admin rights; delete also mc_dm_category:delete_hard.
import { LIMITS } from '../../config.js';
import type { Category } from '../../generated/prisma/client.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { GraphQLResolveInfo } from 'graphql';
import { categoryParentOf, categoryReadOf, type CategoryRead } from './store.js';
import type { Context } from '../../graphql/context.js';
import { selectedFields } from '../../graphql/selected-fields.js';
import { builder, type Types } from '../../graphql/builder.js';
import { listOf, orderEnum, pageArgs } from '../../graphql/pagination.js';
import { deletePayloadOf, payloadOf } from '../../graphql/payloads.js';
import { NodeRef, registerNode } from '../../graphql/node.js';
import {
  CATEGORY_ORDERS,
  createCategory,
  deleteCategory,
  listCategories,
  readCategory,
  updateCategory,
} from './rules.js';

const READ = ['mc_dm_category:read'];
const WRITE = ['mc_dm_category:write'];

export const CategoryRef = builder.prismaObject('Category', {
  description:
    'A node of the category tree that groups downloads. Reading one needs mc_dm_category:read and the view permission in it; permissions set on a category apply to its subcategories unless they override them.',
  interfaces: [NodeRef],
  fields: (t) => ({
    categoryId: t.exposeInt('id', { description: "The numeric category id (the REST API's `category_id`)." }),
    parentCategoryId: t.int({ description: '0 for a top-level category.', resolve: (c) => c.parentId ?? 0 }),
    title: t.exposeString('title', { description: `The category name (at most ${LIMITS.maxTitle} characters).` }),
    description: t.exposeString('description', { description: 'Free text shown with the category; empty when none.' }),
    displayOrder: t.exposeInt('displayOrder', { description: 'Sort key for the DISPLAY_ORDER order; 0 or more.' }),
    downloadCount: t.exposeInt('downloadCount', {
      description: 'Downloads in the VISIBLE state directly in this category (subcategories not included).',
    }),
    faIcon: t.exposeString('faIcon', { description: 'Icon class name, e.g. fa-map; empty when none.' }),
    iconColor: t.exposeString('iconColor', {
      description: 'CSS hex colour of the icon, e.g. #1e90ff; empty when none.',
    }),
    viewUrl: t.string({
      description: 'The public URL of the category page on the forum.',
      resolve: (c, _a, ctx) => categoryUrl(ctx.config.baseUrl, c),
    }),
    requireApproval: t.exposeBoolean('requireApproval', {
      description: 'New downloads here start MODERATED unless their author holds bypassApproval.',
    }),
    requireCommentApproval: t.exposeBoolean('requireCommentApproval', {
      description: 'New comments on downloads here start MODERATED unless their author holds bypassCommentApproval.',
    }),
    enableVersioning: t.exposeBoolean('enableVersioning', {
      description:
        'Downloads here may gain versions (createVersion). Off: each download keeps its single version, with an empty versionString.',
    }),
    allowMultiFile: t.exposeBoolean('allowMultiFile', {
      description: 'A version may hold up to maxFilesPerVersion files. Off: one file per version.',
    }),
    maxTeamMembers: t.exposeInt('maxTeamMembers', {
      description: 'The most team members a download here may have (the owner not counted); 0 allows none.',
    }),
    maxFilesPerVersion: t.exposeInt('maxFilesPerVersion', {
      description: 'With allowMultiFile, the most files a version may hold (deleted and failed files not counted).',
    }),
    maxFileSize: t.expose('maxFileSize', {
      type: 'Long',
      description:
        'The largest file accepted, in bytes; a larger upload is rejected (processor_rejected, processor size).',
    }),
    maxVersionSize: t.expose('maxVersionSize', {
      type: 'Long',
      description:
        "The most bytes the files of one version may hold together; also the limit on an archive's declared uncompressed size.",
    }),
    maxDownloadSize: t.expose('maxDownloadSize', {
      type: 'Long',
      description: 'The most bytes the files of all versions of one download may hold together.',
    }),
    allowedFileTypes: t.exposeString('allowedFileTypes', {
      description:
        'File extensions accepted for uploads, comma-separated, lower case, without dots (e.g. "zip,rar"); empty accepts any.',
    }),
    previewTextEnabled: t.exposeBoolean('previewTextEnabled', {
      description: 'Text previews of files are enabled here (a setting for clients; the service stores it only).',
    }),
    previewImageEnabled: t.exposeBoolean('previewImageEnabled', {
      description: 'Image previews of files are enabled here (a setting for clients; the service stores it only).',
    }),
    canAddDownload: t.boolean({
      description: 'Whether the visitor may create downloads here (the view and add permissions in this category).',
      resolve: (c, _a, ctx) => ctx.withAccess((a) => a.canAddDownload(c)),
    }),
  }),
});

builder.prismaObjectField(CategoryRef, 'parent', (t) =>
  t.field({
    type: CategoryRef,
    nullable: true,
    description: 'The parent category; null at the top of the tree, or when the visitor may not view the parent.',
    select: { parent: true },
    resolve: async (c, _a, ctx) => {
      if (c.parentId === null) return null;
      // Rows the domain read without the selection carry no `parent`: read it then.
      const parent =
        (c as { parent?: Category | null }).parent ??
        (await ctx.prisma.category.findUnique({ where: { id: c.parentId } }));
      return parent && (await ctx.access()).canViewCategory(parent) ? parent : null;
    },
  }),
);

/**
 * What the categories list reads for the operation: only the columns its selected fields need (with=full's knobs
 * are most of a row), and the parents when `parent` is selected. Pothos learns that the parents are loaded only from
 * queryFromInfo (otherwise each `parent` costs a statement), so that is asked only then.
 */
function categoryListRead(ctx: Context, info: GraphQLResolveInfo): CategoryRead {
  const fields = selectedFields(info, ['nodes']);
  const read = categoryReadOf(fields);
  if (fields && !fields.has('parent')) return read;
  return {
    ...read,
    parent: categoryParentOf(queryFromInfo({ context: ctx, info, typeName: 'Category', path: ['nodes'] }) as never),
  };
}

export function categoryUrl(baseUrl: string, c: Pick<Category, 'id'>): string {
  return `${baseUrl}/downloads/categories/${c.id}/`;
}

registerNode('Category', READ, async (ctx, id) => readCategory(ctx.db, await ctx.access(), id));

export const CategoryOrderEnum = orderEnum('CategoryOrder', CATEGORY_ORDERS, {
  description: 'How `categories` is sorted; ties are broken by categoryId in the same direction.',
  values: {
    display_order: 'By displayOrder (the default).',
    title: 'Alphabetically by title.',
    download_count: 'By downloadCount, the number of visible downloads.',
  },
});

const CategoryList = listOf<Category>('Category', CategoryRef);

builder.queryFields((t) => ({
  categories: t.field({
    nullable: true,
    type: CategoryList,
    description:
      'Every category the visitor may view (the view permission), one page at a time, default order DISPLAY_ORDER, DESC. Needs mc_dm_category:read. The tree comes flat: use parentCategoryId or parent to rebuild it.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({ type: CategoryOrderEnum, required: false, description: 'Sort field (default DISPLAY_ORDER).' }),
    },
    resolve: async (_r, args, ctx, info) =>
      listCategories(ctx.db, await ctx.access(), args, categoryListRead(ctx, info)),
  }),
  category: t.prismaField({
    type: 'Category',
    nullable: true,
    description:
      'One category. Needs mc_dm_category:read. Unknown ids answer mc_dm_api_error.category_not_found; categories the visitor may not view, do_not_have_permission.',
    authScopes: { scope: READ },
    args: { categoryId: t.arg.int({ required: true, description: 'The numeric category id.' }) },
    resolve: async (query, _r, args, ctx) =>
      readCategory(ctx.db, await ctx.access(), args.categoryId, categoryParentOf(query as never)),
  }),
}));

const fieldInputs = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  description: t.string({ required: false, description: 'Free text shown with the category.' }),
  parentCategoryId: t.int({
    required: false,
    description:
      'The parent category; 0 for top level. An unknown parent answers mc_dm_api_error.category_not_found; a move under the category itself or one of its subcategories, invalid_input.',
  }),
  displayOrder: t.int({ required: false, description: 'Sort key for the DISPLAY_ORDER order, 0 or more (default 0).' }),
  faIcon: t.string({ required: false, description: 'Icon class name, e.g. fa-map.' }),
  iconColor: t.string({
    required: false,
    description: 'CSS hex colour, e.g. #1e90ff, or empty; anything else answers invalid_input.',
  }),
});

const CreateCategoryInput = builder.inputType('CreateCategoryInput', {
  description: 'Configuration knobs are not accepted on create; set them with updateCategory.',
  fields: (t) => ({
    title: t.string({ required: true, description: 'The category name, 1 to 100 characters.' }),
    ...fieldInputs(t),
  }),
});

const UpdateCategoryInput = builder.inputType('UpdateCategoryInput', {
  description: 'Omitted fields are left untouched.',
  fields: (t) => ({
    categoryId: t.int({ required: true, description: 'The category to change.' }),
    title: t.string({ required: false, description: 'The category name, 1 to 100 characters.' }),
    ...fieldInputs(t),
    requireApproval: t.boolean({
      required: false,
      description: 'New downloads start MODERATED unless their author holds bypassApproval.',
    }),
    requireCommentApproval: t.boolean({
      required: false,
      description: 'New comments start MODERATED unless their author holds bypassCommentApproval.',
    }),
    enableVersioning: t.boolean({ required: false, description: 'Let downloads here gain versions.' }),
    allowMultiFile: t.boolean({
      required: false,
      description: 'Let a version hold up to maxFilesPerVersion files (off: one).',
    }),
    maxTeamMembers: t.int({ required: false, description: 'Team members per download, 0 or more.' }),
    maxFilesPerVersion: t.int({ required: false, description: 'Files per version with allowMultiFile, 0 or more.' }),
    maxFileSize: t.field({ type: 'Long', required: false, description: 'Bytes per file, 0 or more.' }),
    maxVersionSize: t.field({
      type: 'Long',
      required: false,
      description: 'Bytes per version (all its files together), 0 or more.',
    }),
    maxDownloadSize: t.field({
      type: 'Long',
      required: false,
      description: 'Bytes per download (all its files together), 0 or more.',
    }),
    allowedFileTypes: t.string({
      required: false,
      description: 'Comma-separated extensions, e.g. "zip,rar" (case and leading dots are ignored); empty allows any.',
    }),
    previewTextEnabled: t.boolean({ required: false, description: 'Enable text previews (stored for clients).' }),
    previewImageEnabled: t.boolean({ required: false, description: 'Enable image previews (stored for clients).' }),
  }),
});

const DeleteCategoryInput = builder.inputType('DeleteCategoryInput', {
  description: 'Which category to delete; categories have no soft delete.',
  fields: (t) => ({
    categoryId: t.int({ required: true, description: 'The category to delete.' }),
    hard: t.boolean({
      required: false,
      description:
        'Must be true: categories are only hard-deleted (otherwise mc_dm_api_error.category_hard_delete_required).',
    }),
  }),
});

const CreateCategoryPayload = payloadOf<Category>('CreateCategoryPayload', 'category', CategoryRef);
const UpdateCategoryPayload = payloadOf<Category>('UpdateCategoryPayload', 'category', CategoryRef);
const DeleteCategoryPayload = deletePayloadOf<Category>('DeleteCategoryPayload', 'category', CategoryRef);

builder.mutationFields((t) => ({
  createCategory: t.field({
    nullable: true,
    description:
      'Creates a category. Needs mc_dm_category:write and admin rights (an administrator, or a super-user key). Errors: required_input_missing (title), invalid_input, mc_dm_api_error.category_not_found (parentCategoryId).',
    type: CreateCategoryPayload,
    authScopes: { scope: WRITE, admin: true },
    args: { input: t.arg({ type: CreateCategoryInput, required: true, description: 'The new category.' }) },
    resolve: async (_r, { input }, ctx) => {
      const category = await createCategory(ctx.prisma, input);
      ctx.permissions.invalidate();
      return { category };
    },
  }),
  updateCategory: t.field({
    nullable: true,
    description:
      "Changes a category's fields and configuration; omitted fields are kept. Needs mc_dm_category:write and admin rights. Errors: mc_dm_api_error.category_not_found, invalid_input (a parent that would make a loop, a bad colour, a bad extension, a negative limit).",
    type: UpdateCategoryPayload,
    authScopes: { scope: WRITE, admin: true },
    args: {
      input: t.arg({
        type: UpdateCategoryInput,
        required: true,
        description: 'The category and the fields to change.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const category = await updateCategory(ctx.prisma, input.categoryId, input);
      ctx.permissions.invalidate();
      return { category };
    },
  }),
  deleteCategory: t.field({
    nullable: true,
    description:
      "Deletes a category permanently. Needs mc_dm_category:write, mc_dm_category:delete_hard and admin rights. Its contents follow the server's CATEGORY_DELETE_POLICY: `reassign` (the default) moves its subcategories and downloads to its parent, and refuses a top-level category that holds downloads (mc_dm_api_error.category_not_empty); `cascade` hard-deletes the whole subtree with its downloads. Errors also: mc_dm_api_error.category_hard_delete_required (hard not true), mc_dm_api_error.category_not_found.",
    type: DeleteCategoryPayload,
    authScopes: { scope: [...WRITE, 'mc_dm_category:delete_hard'], admin: true },
    args: { input: t.arg({ type: DeleteCategoryInput, required: true, description: 'The category to delete.' }) },
    resolve: async (_r, { input }, ctx) => {
      const { removedBlobs } = await deleteCategory(
        ctx.prisma,
        ctx.config,
        ctx.visitor.userId,
        input.categoryId,
        input.hard ?? false,
      );
      ctx.permissions.invalidate();
      await ctx.removeBlobs(removedBlobs);
      return { success: true as const, typeName: 'Category', id: input.categoryId, object: null };
    },
  }),
}));
