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
]);

/** Root fields that may be about one download: the argument naming it, and arguments that must be absent. */
const ROOTS: Record<string, { arg: string; kind: 'download' | 'version' | 'node'; without?: string[] }> = {
  download: { arg: 'downloadId', kind: 'download' },
  node: { arg: 'id', kind: 'node' },
  comments: { arg: 'downloadId', kind: 'download' },
  commentsConnection: { arg: 'downloadId', kind: 'download' },
  versions: { arg: 'downloadId', kind: 'download' },
  files: { arg: 'versionId', kind: 'version', without: ['hash'] },
  filesConnection: { arg: 'versionId', kind: 'version' },
};

interface RootUse {
  kind: 'download' | 'version' | 'node';
  value: ValueNode;
  without: ValueNode[];
}

const INT32 = 2 ** 31 - 1;

/**
 * The scope of an operation with these variables (undefined: answers by table). The document's analysis is kept per
 * document and operation name; only the arguments' values are read per request.
 */
export class CacheScopes {
  private readonly memo = new WeakMap<DocumentNode, Map<string, RootUse[] | null>>();

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
    let uses = byName.get(name);
    if (uses === undefined) {
      uses = analyse(this.schema, document, operationName);
      byName.set(name, uses);
    }
    if (!uses || uses.length === 0) return undefined;
    let scope: Scope | undefined;
    for (const use of uses) {
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

/** The root fields' uses when every selection stays within one download; null when not. */
function analyse(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): RootUse[] | null {
  const op = getOperationAST(document, operationName);
  const query = schema.getQueryType();
  if (op?.operation !== 'query' || !query) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
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
        if (!within(schema, getNamedType(def.type), sel.selectionSet, fragments, 0)) ok = false;
      } else {
        const f = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
        const on = f?.typeCondition?.name.value;
        if (!f || depth > 20 || (on !== undefined && on !== query.name)) ok = false;
        else roots(f.selectionSet, depth + 1);
      }
    }
  };
  roots(op.selectionSet, 0);
  return ok ? uses : null;
}

/** Whether a selection on `type` follows only allowed fields (fragments on any type are checked as that type). */
function within(
  schema: GraphQLSchema,
  type: GraphQLNamedType,
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  depth: number,
): boolean {
  if (depth > 50) return false;
  if (!('getFields' in type)) return false;
  const fields = type.getFields();
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      const name = sel.name.value;
      if (name === '__typename') continue;
      const def = fields[name];
      if (!def) return false;
      const target = getNamedType(def.type);
      if (isLeafType(target)) continue;
      if (!ALLOWED.has(`${type.name}.${name}`) || !sel.selectionSet) return false;
      if (!within(schema, target, sel.selectionSet, fragments, depth + 1)) return false;
    } else {
      const f = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
      if (!f) return false;
      const on = f.typeCondition ? schema.getType(f.typeCondition.name.value) : type;
      if (!on || !within(schema, on, f.selectionSet, fragments, depth + 1)) return false;
    }
  }
  return true;
}
