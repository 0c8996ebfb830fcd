// Category: the tree that groups downloads. Queries need mc_dm_category:read; writes need
// mc_dm_category:write and admin rights; delete also mc_dm_category:delete_hard.
import type { Category } from '../generated/prisma/client.js';
import { builder, type Types } from './builder.js';
import { listOf, orderEnum, pageArgs } from './pagination.js';
import { deletePayloadOf, payloadOf } from './payloads.js';
import { NodeRef, registerNode } from './node.js';
import { CATEGORY_ORDERS, createCategory, deleteCategory, listCategories, updateCategory, viewableCategory } from '../domain/categories.js';

const READ = ['mc_dm_category:read'];
const WRITE = ['mc_dm_category:write'];

export const CategoryRef = builder.prismaObject('Category', {
  description: 'A node of the category tree. Permissions are inherited down the tree.',
  interfaces: [NodeRef],
  fields: (t) => ({
    categoryId: t.exposeInt('id'),
    parentCategoryId: t.int({ description: '0 for a top-level category.', resolve: (c) => c.parentId ?? 0 }),
    title: t.exposeString('title'),
    description: t.exposeString('description'),
    displayOrder: t.exposeInt('displayOrder'),
    downloadCount: t.exposeInt('downloadCount', { description: 'Visible downloads in this category.' }),
    faIcon: t.exposeString('faIcon'),
    iconColor: t.exposeString('iconColor'),
    viewUrl: t.string({ resolve: (c, _a, ctx) => categoryUrl(ctx.config.baseUrl, c) }),
    requireApproval: t.exposeBoolean('requireApproval'),
    requireCommentApproval: t.exposeBoolean('requireCommentApproval'),
    enableVersioning: t.exposeBoolean('enableVersioning'),
    allowMultiFile: t.exposeBoolean('allowMultiFile'),
    maxTeamMembers: t.exposeInt('maxTeamMembers'),
    maxFilesPerVersion: t.exposeInt('maxFilesPerVersion'),
    maxFileSize: t.expose('maxFileSize', { type: 'Long', description: 'Bytes.' }),
    maxVersionSize: t.expose('maxVersionSize', { type: 'Long', description: 'Bytes.' }),
    maxDownloadSize: t.expose('maxDownloadSize', { type: 'Long', description: 'Bytes.' }),
    allowedFileTypes: t.exposeString('allowedFileTypes', { description: 'Comma-separated extensions; empty allows any.' }),
    previewTextEnabled: t.exposeBoolean('previewTextEnabled'),
    previewImageEnabled: t.exposeBoolean('previewImageEnabled'),
    canAddDownload: t.boolean({ resolve: async (c, _a, ctx) => (await ctx.access()).canAddDownload(c) }),
  }),
});

builder.prismaObjectField(CategoryRef, 'parent', (t) => t.field({
  type: CategoryRef,
  nullable: true,
  description: 'The parent category; null at the top of the tree, or when the visitor may not view the parent.',
  select: { parent: true },
  resolve: async (c, _a, ctx) => {
    if (c.parentId === null) return null;
    // Rows the domain read without the selection carry no `parent`: read it then.
    const parent = (c as { parent?: Category | null }).parent ?? await ctx.prisma.category.findUnique({ where: { id: c.parentId } });
    return parent && (await ctx.access()).canViewCategory(parent) ? parent : null;
  },
}));

export function categoryUrl(baseUrl: string, c: Pick<Category, 'id'>): string {
  return `${baseUrl}/downloads/categories/${c.id}/`;
}

registerNode('Category', READ, async (ctx, id) => viewableCategory(ctx.prisma, await ctx.access(), id));

export const CategoryOrderEnum = orderEnum('CategoryOrder', CATEGORY_ORDERS);

const CategoryList = listOf<Category>('Category', CategoryRef);

builder.queryFields((t) => ({
  categories: t.field({
    nullable: true,
    type: CategoryList,
    description: 'Every category the visitor may view, one page at a time (default order DISPLAY_ORDER, DESC).',
    authScopes: { scope: READ },
    args: { ...pageArgs(t.arg), order: t.arg({ type: CategoryOrderEnum, required: false }) },
    resolve: async (_r, args, ctx) => listCategories(ctx.prisma, await ctx.access(), args),
  }),
  category: t.prismaField({
    type: 'Category',
    nullable: true,
    description: 'One category. Unknown ids answer mc_dm_api_error.category_not_found; hidden ones do_not_have_permission.',
    authScopes: { scope: READ },
    args: { categoryId: t.arg.int({ required: true }) },
    resolve: async (_q, _r, args, ctx) => viewableCategory(ctx.prisma, await ctx.access(), args.categoryId),
  }),
}));

const fieldInputs = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  description: t.string({ required: false }),
  parentCategoryId: t.int({ required: false, description: '0 for top-level.' }),
  displayOrder: t.int({ required: false }),
  faIcon: t.string({ required: false, description: 'Icon class name.' }),
  iconColor: t.string({ required: false, description: 'CSS hex colour, e.g. #1e90ff.' }),
});

const CreateCategoryInput = builder.inputType('CreateCategoryInput', {
  description: 'Configuration knobs are not accepted on create; set them with updateCategory.',
  fields: (t) => ({ title: t.string({ required: true }), ...fieldInputs(t) }),
});

const UpdateCategoryInput = builder.inputType('UpdateCategoryInput', {
  description: 'Omitted fields are left untouched.',
  fields: (t) => ({
    categoryId: t.int({ required: true }),
    title: t.string({ required: false }),
    ...fieldInputs(t),
    requireApproval: t.boolean({ required: false }),
    requireCommentApproval: t.boolean({ required: false }),
    enableVersioning: t.boolean({ required: false }),
    allowMultiFile: t.boolean({ required: false }),
    maxTeamMembers: t.int({ required: false }),
    maxFilesPerVersion: t.int({ required: false }),
    maxFileSize: t.field({ type: 'Long', required: false }),
    maxVersionSize: t.field({ type: 'Long', required: false }),
    maxDownloadSize: t.field({ type: 'Long', required: false }),
    allowedFileTypes: t.string({ required: false, description: 'Comma-separated extensions, e.g. "zip,rar"; empty allows any.' }),
    previewTextEnabled: t.boolean({ required: false }),
    previewImageEnabled: t.boolean({ required: false }),
  }),
});

const DeleteCategoryInput = builder.inputType('DeleteCategoryInput', {
  fields: (t) => ({
    categoryId: t.int({ required: true }),
    hard: t.boolean({ required: false, description: 'Must be true: categories are only hard-deleted.' }),
  }),
});

const CreateCategoryPayload = payloadOf<Category>('CreateCategoryPayload', 'category', CategoryRef);
const UpdateCategoryPayload = payloadOf<Category>('UpdateCategoryPayload', 'category', CategoryRef);
const DeleteCategoryPayload = deletePayloadOf<Category>('DeleteCategoryPayload', 'category', CategoryRef);

builder.mutationFields((t) => ({
  createCategory: t.field({
    nullable: true,
    type: CreateCategoryPayload,
    authScopes: { scope: WRITE, admin: true },
    args: { input: t.arg({ type: CreateCategoryInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const category = await createCategory(ctx.prisma, input);
      ctx.permissions.invalidate();
      return { category };
    },
  }),
  updateCategory: t.field({
    nullable: true,
    type: UpdateCategoryPayload,
    authScopes: { scope: WRITE, admin: true },
    args: { input: t.arg({ type: UpdateCategoryInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const category = await updateCategory(ctx.prisma, input.categoryId, input);
      ctx.permissions.invalidate();
      return { category };
    },
  }),
  deleteCategory: t.field({
    nullable: true,
    type: DeleteCategoryPayload,
    authScopes: { scope: [...WRITE, 'mc_dm_category:delete_hard'], admin: true },
    args: { input: t.arg({ type: DeleteCategoryInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const { removedBlobs } = await deleteCategory(ctx.prisma, ctx.config, ctx.visitor.userId, input.categoryId, input.hard ?? false);
      ctx.permissions.invalidate();
      await ctx.removeBlobs(removedBlobs);
      return { success: true as const, typeName: 'Category', id: input.categoryId, object: null };
    },
  }),
}));
