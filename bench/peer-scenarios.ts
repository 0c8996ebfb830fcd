// The read scenarios as the peer (PostGraphile 4, bench/peer.ts) serves them: GraphQL documents over the same
// tables that select the columns and relations the service returns for the same request, and for each scenario
// how to read the rows out of the three answers (REST, the service's GraphQL, the peer) so that the harness can
// check, before it measures, that the peer answers the same rows in the same order with the same total.
import type { SeedResult } from './seed.js';

/** What one answer holds: the total before paging (null for a single object) and the ids of its rows, in order, each followed by the ids of the objects embedded in it. */
export interface Rows {
  total: number | null;
  ids: number[];
}

export interface PeerScenario {
  /** Name of the peer's scenario; `compare` is the service's REST scenario and `graphql` its GraphQL one. */
  name: string;
  compare: string;
  graphql: string;
  body: string;
  restRows(json: any): Rows;
  graphqlRows(json: any): Rows;
  peerRows(json: any): Rows;
}

// Columns of the service's field sets (rest-adapter/operations/*.fragments.graphql). Fields the service derives
// (view_url, permissions, isVisible, displayName …) have no column; the peer returns the columns they come from.
const fragments: Record<string, string> = {
  D: `fragment D on Download { id categoryId userId title tagLine description iconUrl coverUrl ratingAvg ratingCount reviewCount
    downloadCount viewCount lastUpdate createdDate state prefixId currentVersionId }`,
  DFull:
    'fragment DFull on Download { isPasswordProtected categoryByCategoryId { ...C } versionByCurrentVersionId { ...V } }',
  C: 'fragment C on Category { id parentId title description displayOrder downloadCount faIcon iconColor }',
  V: 'fragment V on Version { id downloadId versionString releaseDate downloadCount state }',
  Cm: 'fragment Cm on Comment { id downloadId userId userByUserId { username } commentDate message state lastEditDate editCount }',
  F: `fragment F on File { id versionId filename displayLabel fileSize fileHash mimeType isPrimary isExternallyLinked externalUrl
    validationStatus displayOrder downloadCount isLinkOnly }`,
};

/** The query with the fragments it spreads (GraphQL rejects unused ones), as a request body. */
export function document(query: string, variables: Record<string, unknown>): string {
  const used = new Set<string>();
  const spread = (text: string) => {
    for (const [, name] of text.matchAll(/\.\.\.(\w+)/g)) {
      if (!used.has(name!)) {
        used.add(name!);
        spread(fragments[name!]!);
      }
    }
  };
  spread(query);
  return JSON.stringify({ query: [query, ...[...used].map((name) => fragments[name])].join('\n'), variables });
}

const restDownload = (d: any) => [
  d.download_id,
  ...(d.Category ? [d.Category.category_id] : []),
  ...(d.CurrentVersion ? [d.CurrentVersion.version_id] : []),
];
const graphqlDownload = (d: any) => [
  d.downloadId,
  ...(d.Category ? [d.Category.categoryId] : []),
  ...(d.CurrentVersion ? [d.CurrentVersion.versionId] : []),
];
const peerDownload = (d: any) => [
  d.id,
  ...(d.categoryByCategoryId ? [d.categoryByCategoryId.id] : []),
  ...(d.versionByCurrentVersionId ? [d.versionByCurrentVersionId.id] : []),
];

/** A list scenario: REST envelope key and id key, the service's GraphQL field and id field, the peer's field. */
function list(
  name: string,
  graphql: string,
  query: string,
  variables: Record<string, unknown>,
  rest: [string, (row: any) => number[]],
  service: [string, (row: any) => number[]],
  peer: [string, (row: any) => number[]],
): PeerScenario {
  return {
    name: `peer ${name}`,
    compare: name,
    graphql,
    body: document(query, variables),
    restRows: (j) => ({ total: j.pagination.total, ids: j[rest[0]].flatMap(rest[1]) }),
    graphqlRows: (j) => ({
      total: j.data[service[0]].pagination.total,
      ids: j.data[service[0]].nodes.flatMap(service[1]),
    }),
    peerRows: (j) => ({ total: j.data[peer[0]].totalCount, ids: j.data[peer[0]].nodes.flatMap(peer[1]) }),
  };
}

export function peerScenarios(s: SeedResult): PeerScenario[] {
  const downloads = (rows: (r: any) => number[]) => ['downloads', rows] as [string, (row: any) => number[]];
  const allDownloads = ['allDownloads', peerDownload] as [string, (row: any) => number[]];
  return [
    {
      name: 'peer download get full',
      compare: 'download get full',
      graphql: 'graphql download get full',
      body: document('query ($id: Int!) { downloadById(id: $id) { ...D ...DFull } }', { id: s.downloadId }),
      restRows: (j) => ({ total: null, ids: restDownload(j.download) }),
      graphqlRows: (j) => ({ total: null, ids: graphqlDownload(j.data.download) }),
      peerRows: (j) => ({ total: null, ids: peerDownload(j.data.downloadById) }),
    },
    list(
      'downloads list 20',
      'graphql downloads list 20',
      'query { allDownloads(first: 20, orderBy: [LAST_UPDATE_DESC, ID_DESC]) { totalCount nodes { ...D } } }',
      {},
      downloads(restDownload),
      downloads(graphqlDownload),
      allDownloads,
    ),
    list(
      'downloads list by category',
      'graphql downloads list by category',
      'query ($c: Int!) { allDownloads(first: 20, condition: { categoryId: $c }, orderBy: [LAST_UPDATE_DESC, ID_DESC]) { totalCount nodes { ...D } } }',
      { c: s.leafCategory },
      downloads(restDownload),
      downloads(graphqlDownload),
      allDownloads,
    ),
    list(
      'downloads list 100 full',
      'graphql downloads list 100 full',
      'query { allDownloads(first: 100, orderBy: [LAST_UPDATE_DESC, ID_DESC]) { totalCount nodes { ...D ...DFull } } }',
      {},
      downloads(restDownload),
      downloads(graphqlDownload),
      allDownloads,
    ),
    list(
      'comments list',
      'graphql comments list',
      'query ($d: Int!) { allComments(first: 20, condition: { downloadId: $d }, orderBy: [COMMENT_DATE_DESC, ID_DESC]) { totalCount nodes { ...Cm } } }',
      { d: s.commentDownloadId },
      ['comments', (c) => [c.comment_id]],
      ['comments', (c) => [c.commentId]],
      ['allComments', (c) => [c.id]],
    ),
    list(
      'files list',
      'graphql files list',
      'query ($v: Int!) { allFiles(first: 20, condition: { versionId: $v, isDeleted: false }, orderBy: [DISPLAY_ORDER_DESC, ID_DESC]) { totalCount nodes { ...F } } }',
      { v: s.versionId },
      ['files', (f) => [f.file_id]],
      ['files', (f) => [f.fileId]],
      ['allFiles', (f) => [f.id]],
    ),
    list(
      'categories list',
      'graphql categories list',
      'query { allCategories(first: 20, orderBy: [DISPLAY_ORDER_DESC, ID_DESC]) { totalCount nodes { ...C } } }',
      {},
      ['categories', (c) => [c.category_id]],
      ['categories', (c) => [c.categoryId]],
      ['allCategories', (c) => [c.id]],
    ),
  ];
}
