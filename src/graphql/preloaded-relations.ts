// A Pothos plugin: a one-to-one relation already loaded with its row (a download's category and current version,
// which the hand-written list and get statements load beside each download) answers from the row at once, when
// nothing under it in the operation is loaded by the Prisma plugin; and so does a field whose resolver reads a
// selection of its own (`t.string({ select, resolve })`: a comment's `username`, a download's `tags`) when that
// selection is on the row.
//
// The Prisma plugin's own resolver first looks up which query plan loaded the row, by the field's response path, in
// a map kept per request (@pothos/selection-mapper), and records the nested plan for the fields below; only then does
// it read the row. Its path keys are memoised per path object, but graphql-jit makes a new path for every call, so
// each call builds the whole path's strings and weak-map entries again: for a 100-row list with its categories and
// versions, a tenth of the CPU, and more again in the garbage collector (`npm run bench:profile`). When the relation
// is on the row (the plugin's own "loaded" check) and the selection below it holds no field that the Prisma plugin
// loads (only columns and computed fields), the plan's record is read by nobody, so the row's value is the answer.
//
// Only relations to one row, without arguments and without a resolver of their own: two aliases of such a field read
// the same row, so the plan that loaded it cannot disagree with the field (a relation to one row takes no filter or
// order; the catalogue's prisma objects load whole rows, with no narrowing `select`). A field with a selection of its
// own qualifies when it takes no arguments, returns a scalar (or a list of them: nothing below it has a plan), and its
// selection is a fixed tree of columns and nested `select`s, each of which is found on the row (every element of a
// list): its resolver reads nothing else, so what the plugin would load is what the row holds. Registered between
// the scope-auth and Prisma plugins (src/graphql/builder.ts), so a field's authorization still wraps it.
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from '@pothos/core';
import {
  getNamedType,
  isAbstractType,
  isObjectType,
  Kind,
  type FieldNode,
  type GraphQLFieldResolver,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql';

const pluginName = 'preloadedRelations';

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      preloadedRelations: PreloadedRelationsPlugin<Types>;
    }
  }
}

/** Whether a field is resolved through the Prisma plugin's query plans. */
const planned = (field: { extensions?: unknown }): boolean =>
  Boolean((field.extensions as { pothosPrismaSelect?: unknown } | null | undefined)?.pothosPrismaSelect);

/** Whether the selection `set` on `type` (its fragments and the fields below it included) holds no planned field. */
function plainSelection(type: GraphQLObjectType, set: SelectionSetNode | undefined, info: GraphQLResolveInfo): boolean {
  for (const sel of set?.selections ?? []) {
    if (sel.kind === Kind.FIELD) {
      if (sel.name.value.startsWith('__')) continue;
      const field = type.getFields()[sel.name.value];
      if (!field || planned(field)) return false;
      if (!sel.selectionSet) continue;
      const named = getNamedType(field.type);
      if (!isObjectType(named) || !plainSelection(named, sel.selectionSet, info)) return false;
      continue;
    }
    const fragment = sel.kind === Kind.INLINE_FRAGMENT ? sel : info.fragments[sel.name.value];
    if (!fragment) return false;
    const condition = fragment.typeCondition && info.schema.getType(fragment.typeCondition.name.value);
    // A fragment on another object type never applies; on an interface or union the object's type is ours.
    if (condition && condition !== type && !isAbstractType(condition)) continue;
    if (!plainSelection(type, fragment.selectionSet, info)) return false;
  }
  return true;
}

/**
 * Per place in a document (its field nodes: graphql-jit hands the same ones to every run of a compiled document),
 * whether the selection below holds no planned field. @include/@skip are not read: a planned field they leave out
 * still sends the relation through the Prisma plugin, which answers it correctly, only slower.
 */
const plainByPlace = new WeakMap<readonly FieldNode[], boolean>();

function plainPlace(info: GraphQLResolveInfo): boolean {
  let plain = plainByPlace.get(info.fieldNodes);
  if (plain === undefined) {
    const type = getNamedType(info.returnType);
    plain = isObjectType(type) && info.fieldNodes.every((node) => plainSelection(type, node.selectionSet, info));
    plainByPlace.set(info.fieldNodes, plain);
  }
  return plain;
}

interface RelationExtensions {
  pothosPrismaRelationField?: { isList?: boolean };
  pothosPrismaLoaded?: (parent: unknown, info: GraphQLResolveInfo, context: unknown) => boolean;
  /** Set when the relation has a resolver of its own (`t.relation(name, { resolve })`). */
  pothosPrismaFallback?: unknown;
  /** The field's own selection (`t.field({ select })`), or a relation's. */
  pothosPrismaSelect?: unknown;
}

type Present = (value: unknown) => boolean;

/**
 * A check that the selection `select` is on a row: each key present (null for a relation that has no row), each
 * nested `select` on the related row, or on every row of a list. Null for a selection it cannot check this way (a
 * function of the arguments, relation arguments such as `where` or `take`, `include`, an empty selection).
 */
export function selectionCheck(select: unknown): Present | null {
  if (!select || typeof select !== 'object' || Array.isArray(select)) return null;
  const keys: [string, Present | null][] = [];
  for (const [key, value] of Object.entries(select)) {
    if (value === true) {
      keys.push([key, null]);
      continue;
    }
    if (!value || typeof value !== 'object' || Object.keys(value).join() !== 'select') return null;
    const nested = selectionCheck((value as { select: unknown }).select);
    if (!nested) return null;
    keys.push([key, nested]);
  }
  if (keys.length === 0) return null;
  return (row) => {
    if (row === null || typeof row !== 'object') return false;
    for (const [key, nested] of keys) {
      const value = (row as Record<string, unknown>)[key];
      if (value === undefined) return false;
      if (!nested || value === null) continue;
      if (Array.isArray(value)) {
        for (const item of value) if (!nested(item)) return false;
      } else if (!nested(value)) return false;
    }
    return true;
  };
}

export class PreloadedRelationsPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(
    resolver: GraphQLFieldResolver<unknown, Types['Context'], object>,
    fieldConfig: PothosOutputFieldConfig<Types>,
  ): GraphQLFieldResolver<unknown, Types['Context'], object> {
    if (fieldConfig.kind !== 'PrismaObject' || Object.keys(fieldConfig.args).length > 0) return resolver;
    const ext = fieldConfig.extensions as RelationExtensions | undefined;
    const own = fieldConfig.resolve;
    if (!own || ext?.pothosPrismaFallback !== undefined) return resolver;
    if (!ext?.pothosPrismaRelationField) {
      // A field with a selection of its own, returning scalars.
      const leaf = fieldConfig.type.kind === 'List' ? fieldConfig.type.type.kind : fieldConfig.type.kind;
      const onRow = leaf === 'Scalar' || leaf === 'Enum' ? selectionCheck(ext?.pothosPrismaSelect) : null;
      if (!onRow) return resolver;
      return (parent, args, context, info) =>
        onRow(parent) ? own(parent, args, context, info) : resolver(parent, args, context, info);
    }
    const loaded = ext.pothosPrismaLoaded;
    if (ext.pothosPrismaRelationField.isList !== false || !loaded || fieldConfig.type.kind === 'List') return resolver;
    return (parent, args, context, info) =>
      plainPlace(info) && loaded(parent, info, context)
        ? own(parent, args, context, info)
        : resolver(parent, args, context, info);
  }
}

SchemaBuilder.registerPlugin(pluginName, PreloadedRelationsPlugin);

export default pluginName;
