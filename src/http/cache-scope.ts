// Which answers are about one download, for the read cache (src/http/read-cache.ts): those may record that download's
// versions of the tables that belong to downloads (DOWNLOAD_TABLES, src/db/cache-versions.ts) instead of the whole
// tables', so a write about another download leaves them kept.
//
// An operation is about one download when it is a query whose every root field is one of
//   download(downloadId: D), node(id: <a Download's id>), comments / commentsConnection / versions (downloadId: D),
//   files / filesConnection (versionId: V, no hash): a version's files, scoped to the version's download,
// all naming the same download (or version), and whose selections, fragments included, only follow fields that read
// that download's rows of those tables (ALLOWED below: from a download to its category, owner, prefix, versions,
// comments, team; from a version to its files; never to a category's downloads, a version's dependencies resolved,
// reviews, or anything else that may read other downloads). Leaf fields are allowed: each reads its own row or
// tables kept by table. Anything else, or a value that is not a valid id, answers by table (no scope): when in doubt,
// whole tables. Both faces use this rule (the REST routes run GraphQL documents), so the REST get of a download and
// its comments, versions and files lists are scoped through their documents (a test checks it).
//
// A list of one category's downloads is scoped the same way: root `downloads` (without a search, `q`) or
// `downloadsConnection` with categoryId C, or root `category(categoryId: C)` with its own `downloads` (not its
// parent's or children's), and selections that follow the same fields from its downloads. Its rows
// are C's only (the filter is the direct category, not subcategories), so its answer records C's versions of the
// download rows and the list totals (CATEGORY_TABLES) and every other table whole.
//
// A selection that would leave the scope but is left out by a directive on a variable (the REST list's
// `facets @include(if: $facets)`) makes the scope hold only for requests where that variable leaves it out.
import {
  getNamedType,
  getOperationAST,
  isLeafType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { Scope } from '../db/cache-versions.js';
import { fromGlobalId } from '../graphql/node.js';

/** Object-valued fields an answer about one download may follow: each stays within that download's rows. */
const ALLOWED = new Set([
  'Download.category',
  'Download.owner',
  'Download.prefix',
  'Download.currentVersion',
  'Download.versions',
  'Download.versionsConnection',
  'Download.comments',
  'Download.team',
  'Version.download',
  'Version.fileList',
  'Version.files',
  'Version.dependencies', // stored on the version row: ids and ranges, no other download read
  'File.version',
  'Comment.author',
  'Comment.download',
  'Comment.edits',
  'Category.parent',
  'Category.children',
  'CategoryConnection.edges',
  'CategoryConnection.nodes',
  'CategoryConnection.pageInfo',
  'CategoryEdge.node',
  'CommentList.nodes',
  'CommentList.pagination',
  'CommentConnection.edges',
  'CommentConnection.nodes',
  'CommentConnection.pageInfo',
  'CommentEdge.node',
  'VersionList.nodes',
  'VersionList.pagination',
  'VersionConnection.edges',
  'VersionConnection.nodes',
  'VersionConnection.pageInfo',
  'VersionEdge.node',
  'FileList.nodes',
  'FileList.pagination',
  'FileConnection.edges',
  'FileConnection.nodes',
  'FileConnection.pageInfo',
  'FileEdge.node',
  'DownloadTeamConnection.edges',
  'DownloadTeamConnection.nodes',
  'DownloadTeamConnection.pageInfo',
  'DownloadTeamEdge.node',
  // A category's list (roots `downloads` and `downloadsConnection` with categoryId): its rows are that category's.
  'DownloadList.nodes',
  'DownloadList.pagination',
  'DownloadConnection.edges',
  'DownloadConnection.nodes',
  'DownloadConnection.pageInfo',
  'DownloadEdge.node',
]);

type Kind_ = 'download' | 'version' | 'node' | 'category';

/**
 * Root fields that may be about one download (or list one category's downloads): the argument naming it, and
 * arguments that must be absent (a search's page and facets read other categories' rows).
 */
const ROOTS: Record<string, { arg: string; kind: Kind_; without?: string[]; below?: ReadonlySet<string> }> = {
  download: { arg: 'downloadId', kind: 'download' },
  downloads: { arg: 'categoryId', kind: 'category', without: ['q'] },
  downloadsConnection: { arg: 'categoryId', kind: 'category' },
  // A category and its own downloads (a category's page): `downloads` is allowed on the root's category only, not on
  // its parent's or children's.
  category: { arg: 'categoryId', kind: 'category', below: new Set(['Category.downloads']) },
  node: { arg: 'id', kind: 'node' },
  comments: { arg: 'downloadId', kind: 'download' },
  commentsConnection: { arg: 'downloadId', kind: 'download' },
  versions: { arg: 'downloadId', kind: 'download' },
  files: { arg: 'versionId', kind: 'version', without: ['hash'] },
  filesConnection: { arg: 'versionId', kind: 'version' },
};

interface RootUse {
  kind: Kind_;
  value: ValueNode;
  without: ValueNode[];
}

/**
 * A selection that would read beyond the scope but is left out by a directive: the scope holds only when the variable
 * leaves it out (`@include(if: $v)` with $v false, `@skip(if: $v)` with $v true; an absent variable is its default).
 */
interface Condition {
  variable: string;
  leftOutWhen: boolean;
  default: unknown;
}

interface Analysis {
  uses: RootUse[];
  conditions: Condition[];
}

const INT32 = 2 ** 31 - 1;

/**
 * The scope of an operation with these variables (undefined: answers by table). The document's analysis is kept per
 * document and operation name; only the arguments' values are read per request.
 */
export class CacheScopes {
  private readonly memo = new WeakMap<DocumentNode, Map<string, Analysis | null>>();

  constructor(private readonly schema: GraphQLSchema) {}

  scopeOf(
    document: DocumentNode,
    operationName: string | null | undefined,
    variables: Record<string, unknown> | null | undefined,
  ): Scope | undefined {
    let byName = this.memo.get(document);
    if (!byName) {
      byName = new Map();
      this.memo.set(document, byName);
    }
    const name = operationName ?? '';
    let analysis = byName.get(name);
    if (analysis === undefined) {
      analysis = analyse(this.schema, document, operationName);
      byName.set(name, analysis);
    }
    if (!analysis || analysis.uses.length === 0) return undefined;
    for (const c of analysis.conditions) {
      const v = variables?.[c.variable];
      if ((v === undefined ? c.default : v) !== c.leftOutWhen) return undefined;
    }
    let scope: Scope | undefined;
    for (const use of analysis.uses) {
      if (use.without.some((v) => argValue(v, variables) != null)) return undefined;
      const s = scopeOfValue(use, argValue(use.value, variables));
      if (!s) return undefined;
      if (scope && JSON.stringify(scope) !== JSON.stringify(s)) return undefined;
      scope = s;
    }
    return scope;
  }
}

function scopeOfValue(use: RootUse, value: unknown): Scope | undefined {
  if (use.kind === 'node') {
    if (typeof value !== 'string') return undefined;
    try {
      const { type, id } = fromGlobalId(value);
      return type === 'Download' && isId(id) ? { download: id } : undefined;
    } catch {
      return undefined;
    }
  }
  if (!isId(value)) return undefined;
  if (use.kind === 'category') return { category: value };
  return use.kind === 'download' ? { download: value } : { version: value };
}

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= INT32;
}

function argValue(node: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (node.kind) {
    case Kind.VARIABLE:
      return variables?.[node.name.value];
    case Kind.INT:
      return Number(node.value);
    case Kind.STRING:
      return node.value;
    case Kind.NULL:
      return null;
    default:
      return NaN; // anything else is not an id
  }
}

/**
 * The root fields' uses when every selection stays within one download (or one category's list), and the directives
 * that must leave out the selections that would not; null when not.
 */
function analyse(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): Analysis | null {
  const op = getOperationAST(document, operationName);
  const query = schema.getQueryType();
  if (op?.operation !== 'query' || !query) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const defaults = new Map<string, unknown>();
  for (const v of op.variableDefinitions ?? [])
    defaults.set(v.variable.name.value, v.defaultValue?.kind === Kind.BOOLEAN ? v.defaultValue.value : undefined);
  const walk: Walk = { schema, fragments, defaults, conditions: [] };
  const uses: RootUse[] = [];
  const fields = query.getFields();
  let ok = true;
  const roots = (set: SelectionSetNode, depth: number): void => {
    for (const sel of set.selections) {
      if (!ok) return;
      if (sel.kind === Kind.FIELD) {
        if (sel.name.value === '__typename') continue;
        const root = ROOTS[sel.name.value];
        const def = fields[sel.name.value];
        const arg = sel.arguments?.find((a) => a.name.value === root?.arg);
        if (!root || !def || !arg || !sel.selectionSet) {
          ok = false;
          return;
        }
        const without = (root.without ?? []).flatMap((w) => {
          const a = sel.arguments?.find((x) => x.name.value === w);
          return a ? [a.value] : [];
        });
        uses.push({ kind: root.kind, value: arg.value, without });
        if (!within(walk, getNamedType(def.type), sel.selectionSet, 0, root.below)) ok = false;
      } else {
        const f = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
        const on = f?.typeCondition?.name.value;
        if (!f || depth > 20 || (on !== undefined && on !== query.name)) ok = false;
        else roots(f.selectionSet, depth + 1);
      }
    }
  };
  roots(op.selectionSet, 0);
  return ok ? { uses, conditions: walk.conditions } : null;
}

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  /** Each variable's default, when it is a literal true or false. */
  defaults: Map<string, unknown>;
  conditions: Condition[];
}

/**
 * Whether a selection on `type` follows only allowed fields (fragments on any type are checked as that type). A
 * selection that does not but carries @include or @skip on a variable adds the condition that it is left out.
 */
function within(
  walk: Walk,
  type: GraphQLNamedType,
  set: SelectionSetNode,
  depth: number,
  here?: ReadonlySet<string>,
): boolean {
  if (depth > 50) return false;
  if (!('getFields' in type)) return false;
  const fields = type.getFields();
  for (const sel of set.selections) {
    if (allowed(walk, type, fields, sel, depth, here)) continue;
    const condition = leftOutBy(walk, sel);
    if (!condition) return false;
    if (condition !== true) walk.conditions.push(condition);
  }
  return true;
}

function allowed(
  walk: Walk,
  type: GraphQLNamedType,
  fields: Record<string, { type: Parameters<typeof getNamedType>[0] }>,
  sel: SelectionSetNode['selections'][number],
  depth: number,
  here?: ReadonlySet<string>,
): boolean {
  if (sel.kind === Kind.FIELD) {
    const name = sel.name.value;
    if (name === '__typename') return true;
    const def = fields[name];
    if (!def) return false;
    const target = getNamedType(def.type);
    if (!target) return false;
    if (isLeafType(target)) return true;
    const key = `${type.name}.${name}`;
    if (!(ALLOWED.has(key) || here?.has(key)) || !sel.selectionSet) return false;
    return within(walk, target, sel.selectionSet, depth + 1);
  }
  // A fragment on the same object stays at its level (the fields allowed `here` are still allowed in it).
  const f = sel.kind === Kind.FRAGMENT_SPREAD ? walk.fragments.get(sel.name.value) : sel;
  if (!f) return false;
  const on = f.typeCondition ? walk.schema.getType(f.typeCondition.name.value) : type;
  return !!on && within(walk, on, f.selectionSet, depth + 1, on === type ? here : undefined);
}

/**
 * How a selection is left out by its directives: true when always (a literal `@include(if: false)`), a condition on
 * a variable, or null when it is not. A fragment spread's directives are its own; those of its definition are not
 * looked at (not left out).
 */
function leftOutBy(walk: Walk, sel: SelectionSetNode['selections'][number]): Condition | true | null {
  for (const d of sel.directives ?? []) {
    const name = d.name.value;
    if (name !== 'include' && name !== 'skip') continue;
    const arg = d.arguments?.find((a) => a.name.value === 'if')?.value;
    const leftOutWhen = name === 'skip';
    if (arg?.kind === Kind.BOOLEAN) {
      if (arg.value === leftOutWhen) return true;
    } else if (arg?.kind === Kind.VARIABLE) {
      const variable = arg.name.value;
      return { variable, leftOutWhen, default: walk.defaults.get(variable) };
    }
  }
  return null;
}
