// The authorization matrix, as a reviewer reads it: who may do what to which object, written from the permission
// rules (key types, scopes, groups, derived checks), NOT from what the code answers. test/authz-matrix.test.ts
// runs every row against every key type × scope set × object state, on both faces, and fails when the schema or
// the REST route table has an entry this file does not cover.
//
// The world the rules are applied to (built by test/authz/fixtures.ts):
//   actors  guest       a GUEST key (the guest visitor, groups: guest)
//           user        a USER key of alice (groups: registered)
//           moderator   a USER key of a moderator-flagged user (groups: registered, moderator)
//           admin       a USER key of an administrator (groups: registered, administrator)
//           super       a SUPER key, no Forum-Api-User (acts as the guest, passes every permission check)
//           superAsUser the SUPER key with Forum-Api-User: alice
//   objects in three categories: `open` (comments need approval), `approval` (downloads need approval) and
//           `hidden` (view denied to the guest and registered groups). Each object kind comes in the states
//           visibleOwn, visibleOther, moderatedOwn, moderatedOther, deletedOwn, hidden ("own" = alice's; "other" = bob's).
//   scopes  none  = every scope but the ones needed; exactly = the ones needed; all = all six.

export const ALL_SCOPES = [
  'mc_dm_category:read',
  'mc_dm_category:write',
  'mc_dm_category:delete_hard',
  'mc_dm_download:read',
  'mc_dm_download:write',
  'mc_dm_download:delete_hard',
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

const CR: Scope[] = ['mc_dm_category:read'];
const CW: Scope[] = ['mc_dm_category:write'];
const CWH: Scope[] = ['mc_dm_category:write', 'mc_dm_category:delete_hard'];
const DR: Scope[] = ['mc_dm_download:read'];
const DW: Scope[] = ['mc_dm_download:write'];
/** "Any write scope": the admin mutations on users and keys. */
export const ANY_WRITE = 'any-write' as const;

export type Actor = 'guest' | 'user' | 'moderator' | 'admin' | 'super' | 'superAsUser';
export const ACTORS: Actor[] = ['guest', 'user', 'moderator', 'admin', 'super', 'superAsUser'];
export type ScopeSet = 'none' | 'exactly' | 'all';
export const SCOPE_SETS: ScopeSet[] = ['none', 'exactly', 'all'];

export type State = 'visibleOwn' | 'visibleOther' | 'moderatedOwn' | 'moderatedOther' | 'deletedOwn' | 'hidden';
export const STATES: State[] = ['visibleOwn', 'visibleOther', 'moderatedOwn', 'moderatedOther', 'deletedOwn', 'hidden'];
export type CategoryState = 'open' | 'hidden';

/** What an object kind's states are: downloads, comments (on alice's visible download) and files have six. */
export type Target = 'none' | 'category' | 'download' | 'comment' | 'file' | 'review';
export const statesOf = (t: Target): readonly string[] =>
  t === 'none' ? ['-'] : t === 'category' ? ['open', 'hidden'] : STATES;

// ── The permission rules ───────────────────────────────────────────────────────────────────────────────────

type Permission =
  | 'view'
  | 'viewComments'
  | 'download'
  | 'add'
  | 'comment'
  | 'editOwn'
  | 'editAny'
  | 'deleteOwn'
  | 'deleteAny'
  | 'hardDeleteAny'
  | 'moveAny'
  | 'bypassApproval'
  | 'bypassCommentApproval'
  | 'viewModerated'
  | 'viewDeleted'
  | 'editOwnComment'
  | 'editAnyComment'
  | 'deleteOwnComment'
  | 'deleteAnyComment'
  | 'review';

const GUEST_GROUP: Permission[] = ['view', 'viewComments', 'download'];
const REGISTERED_GROUP: Permission[] = [
  ...GUEST_GROUP,
  'add',
  'comment',
  'editOwn',
  'deleteOwn',
  'editOwnComment',
  'deleteOwnComment',
  'review',
];
const STAFF_GROUP = 'every' as const; // moderator and administrator groups hold every permission

export interface Who {
  /** 'alice' for the user and superAsUser actors; the guest visitor is 'guest'. */
  as: 'guest' | 'alice' | 'moderator' | 'admin';
  isSuper: boolean;
  isAdmin: boolean;
  isModerator: boolean;
}

export const WHO: Record<Actor, Who> = {
  guest: { as: 'guest', isSuper: false, isAdmin: false, isModerator: false },
  user: { as: 'alice', isSuper: false, isAdmin: false, isModerator: false },
  moderator: { as: 'moderator', isSuper: false, isAdmin: false, isModerator: true },
  admin: { as: 'admin', isSuper: false, isAdmin: true, isModerator: false },
  super: { as: 'guest', isSuper: true, isAdmin: false, isModerator: false },
  superAsUser: { as: 'alice', isSuper: true, isAdmin: false, isModerator: false },
};

/** Whether `w` holds `perm` in a category (the hidden one denies `view` to the guest and registered groups). */
function has(w: Who, perm: Permission, category: CategoryState): boolean {
  if (w.isSuper) return true;
  if (w.as === 'moderator' || w.as === 'admin') return STAFF_GROUP === 'every';
  if (category === 'hidden' && perm === 'view') return false;
  return (w.as === 'guest' ? GUEST_GROUP : REGISTERED_GROUP).includes(perm);
}

/** The row a state stands for: its category, its state and whether alice owns (or wrote) it. */
export function objectOf(state: State): {
  category: CategoryState;
  state: 'visible' | 'moderated' | 'deleted';
  own: boolean;
} {
  switch (state) {
    case 'visibleOwn':
      return { category: 'open', state: 'visible', own: true };
    case 'visibleOther':
      return { category: 'open', state: 'visible', own: false };
    case 'moderatedOwn':
      return { category: 'open', state: 'moderated', own: true };
    case 'moderatedOther':
      return { category: 'open', state: 'moderated', own: false };
    case 'deletedOwn':
      return { category: 'open', state: 'deleted', own: true };
    case 'hidden':
      return { category: 'hidden', state: 'visible', own: true };
  }
}

const owns = (w: Who, o: { own: boolean }) => w.as === 'alice' && o.own;

export const rules = {
  canViewCategory: (w: Who, c: CategoryState) => has(w, 'view', c),
  canAddDownload: (w: Who, c: CategoryState) => has(w, 'view', c) && has(w, 'add', c),
  canViewDownload(w: Who, s: State): boolean {
    if (w.isSuper) return true;
    const o = objectOf(s);
    if (!has(w, 'view', o.category)) return false;
    if (o.state === 'moderated') return owns(w, o) || has(w, 'viewModerated', o.category);
    if (o.state === 'deleted') return has(w, 'viewDeleted', o.category);
    return true;
  },
  canEditDownload: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewDownload(w, s) &&
      (has(w, 'editAny', objectOf(s).category) || (owns(w, objectOf(s)) && has(w, 'editOwn', objectOf(s).category)))),
  canDeleteDownload: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewDownload(w, s) &&
      (has(w, 'deleteAny', objectOf(s).category) ||
        (owns(w, objectOf(s)) && has(w, 'deleteOwn', objectOf(s).category)))),
  canRestoreDownload: (w: Who, s: State) =>
    w.isSuper || (has(w, 'viewDeleted', objectOf(s).category) && has(w, 'deleteAny', objectOf(s).category)),
  /** The download's team: its owner, an administrator, or editAny (or a super-user key). */
  canManageTeam: (w: Who, s: State) =>
    w.isSuper || w.isAdmin || owns(w, objectOf(s)) || has(w, 'editAny', objectOf(s).category),
  canDownload: (w: Who, s: State) => rules.canViewDownload(w, s) && has(w, 'download', objectOf(s).category),
  /** Downloads lists show every state to moderators, administrators and super-user keys, else visible rows only. */
  listsDownload: (w: Who, s: State) =>
    rules.canViewDownload(w, s) && (w.isSuper || w.isModerator || w.isAdmin || objectOf(s).state === 'visible'),
  // Comments: the state is the comment's; its download is alice's visible download (for `hidden`, one in the hidden
  // category). The owner of the download is NOT the author: only the author and moderators see a moderated comment.
  canViewCommentsOf: (w: Who, s: State) =>
    w.isSuper || (has(w, 'view', objectOf(s).category) && has(w, 'viewComments', objectOf(s).category)),
  canViewComment(w: Who, s: State): boolean {
    if (w.isSuper) return true;
    const o = objectOf(s);
    if (!rules.canViewCommentsOf(w, s)) return false;
    if (o.state === 'moderated') return owns(w, o) || has(w, 'viewModerated', o.category);
    if (o.state === 'deleted') return has(w, 'viewDeleted', o.category);
    return true;
  },
  canEditComment: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewComment(w, s) &&
      (has(w, 'editAnyComment', objectOf(s).category) ||
        (owns(w, objectOf(s)) && has(w, 'editOwnComment', objectOf(s).category)))),
  canDeleteComment: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewComment(w, s) &&
      (has(w, 'deleteAnyComment', objectOf(s).category) ||
        (owns(w, objectOf(s)) && has(w, 'deleteOwnComment', objectOf(s).category)))),
  /** Comment lists show only visible comments, except to super-user keys. */
  listsComment: (w: Who, s: State) => w.isSuper || (rules.canViewComment(w, s) && objectOf(s).state === 'visible'),
  canComment: (w: Who, s: State) =>
    rules.canViewCommentsOf(w, s) && rules.canViewDownload(w, s) && has(w, 'comment', objectOf(s).category),
  /** Moderation: viewModerated and the matching edit (approve) or delete (reject) permission, on a moderated row. */
  canApproveDownload: (w: Who, s: State) =>
    w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canEditDownload(w, s)),
  canRejectDownload: (w: Who, s: State) =>
    w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canDeleteDownload(w, s)),
  canApproveComment: (w: Who, s: State) =>
    w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canEditComment(w, s)),
  canRejectComment: (w: Who, s: State) =>
    w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canDeleteComment(w, s)),
  // Reviews: the state is the review's; its download (one per review) is bob's visible download (for `hidden`, alice's
  // download in the hidden category). "own" = alice wrote it. Only the download's owner replies; the fixtures' owners never can
  // (bob is no actor; alice cannot view the hidden category), so replies pass for super-user keys alone.
  canViewReviewsOf: (w: Who, s: State) => w.isSuper || has(w, 'view', objectOf(s).category),
  canViewReview(w: Who, s: State): boolean {
    if (w.isSuper) return true;
    const o = objectOf(s);
    if (!has(w, 'view', o.category)) return false;
    if (o.state === 'moderated') return owns(w, o) || has(w, 'viewModerated', o.category);
    if (o.state === 'deleted') return has(w, 'viewDeleted', o.category);
    return true;
  },
  canEditReview: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewReview(w, s) &&
      (has(w, 'editAnyComment', objectOf(s).category) ||
        (owns(w, objectOf(s)) && has(w, 'review', objectOf(s).category)))),
  canDeleteReview: (w: Who, s: State) =>
    w.isSuper ||
    (rules.canViewReview(w, s) &&
      (has(w, 'deleteAnyComment', objectOf(s).category) ||
        (owns(w, objectOf(s)) && has(w, 'review', objectOf(s).category)))),
  listsReview: (w: Who, s: State) => w.isSuper || (rules.canViewReview(w, s) && objectOf(s).state === 'visible'),
  /** Moderator, administrator or super-user key: the moderation queue and reports. */
  moderates: (w: Who) => w.isSuper || w.isModerator || w.isAdmin,
  adminRights: (w: Who) => w.isSuper || w.isAdmin,
  isGuest: (w: Who) => w.as === 'guest',
};

// ── Outcomes ───────────────────────────────────────────────────────────────────────────────────────────────

/** `ok`; `null` (a node the visitor may not see); `listed`/`unlisted` (a list answers, with or without the target); or an error code. */
export type Outcome = 'ok' | 'null' | 'listed' | 'unlisted' | string;
const DENY = 'do_not_have_permission';
const check = (...steps: [boolean, Outcome][]): Outcome => steps.find(([pass]) => !pass)?.[1] ?? 'ok';

export interface Row {
  /** Scopes the key needs; ANY_WRITE: any one write scope. */
  scopes: Scope[] | typeof ANY_WRITE;
  target: Target;
  /** The outcome once the key holds the scopes. The missing scope answers api_scope_missing first, for every actor. */
  expect: (w: Who, state: any) => Outcome;
  /** Whether a success changes the target so that it must be a fresh object of that state. */
  destructive?: boolean;
}

const list = (listed: boolean): Outcome => (listed ? 'listed' : 'unlisted');

/** Every GraphQL root field. Queries then mutations, in schema order. */
export const fields: Record<string, Row> = {
  // queries
  node: { scopes: DR, target: 'download', expect: (w, s) => (rules.canViewDownload(w, s) ? 'ok' : 'null') },
  nodes: { scopes: DR, target: 'download', expect: (w, s) => (rules.canViewDownload(w, s) ? 'ok' : 'null') },
  viewer: { scopes: [], target: 'none', expect: () => 'ok' },
  categories: { scopes: CR, target: 'category', expect: (w, c) => list(rules.canViewCategory(w, c)) },
  category: { scopes: CR, target: 'category', expect: (w, c) => check([rules.canViewCategory(w, c), DENY]) },
  downloads: { scopes: DR, target: 'download', expect: (w, s) => list(rules.listsDownload(w, s)) },
  download: { scopes: DR, target: 'download', expect: (w, s) => check([rules.canViewDownload(w, s), DENY]) },
  comments: {
    scopes: DR,
    target: 'comment',
    expect: (w, s) => (check([rules.canViewCommentsOf(w, s), DENY]) === 'ok' ? list(rules.listsComment(w, s)) : DENY),
  },
  comment: { scopes: DR, target: 'comment', expect: (w, s) => check([rules.canViewComment(w, s), DENY]) },
  files: { scopes: DR, target: 'file', expect: (w, s) => (rules.canViewDownload(w, s) ? 'listed' : DENY) },
  file: { scopes: DR, target: 'file', expect: (w, s) => check([rules.canViewDownload(w, s), DENY]) },
  // A lookup, not a read of one object: files the visitor may not view are simply absent.
  filesByHash: { scopes: DR, target: 'file', expect: (w, s) => list(rules.canViewDownload(w, s)) },
  // Search: the permission is part of the statement, so what the visitor may not view is simply not found.
  search: { scopes: DR, target: 'download', expect: (w, s) => list(rules.canViewDownload(w, s)) },
  versions: { scopes: DR, target: 'download', expect: (w, s) => (rules.canViewDownload(w, s) ? 'listed' : DENY) },
  version: { scopes: DR, target: 'download', expect: (w, s) => check([rules.canViewDownload(w, s), DENY]) },
  resolveDependencies: { scopes: DR, target: 'download', expect: (w, s) => check([rules.canViewDownload(w, s), DENY]) },
  // A lookup, as filesByHash: versions of files the visitor may not view are simply absent.
  updates: { scopes: DR, target: 'file', expect: (w, s) => list(rules.canViewDownload(w, s)) },
  categoriesConnection: { scopes: CR, target: 'category', expect: (w, c) => list(rules.canViewCategory(w, c)) },
  downloadsConnection: { scopes: DR, target: 'download', expect: (w, s) => list(rules.listsDownload(w, s)) },
  commentsConnection: {
    scopes: DR,
    target: 'comment',
    expect: (w, s) => (check([rules.canViewCommentsOf(w, s), DENY]) === 'ok' ? list(rules.listsComment(w, s)) : DENY),
  },
  reviews: {
    scopes: DR,
    target: 'review',
    expect: (w, s) => (check([rules.canViewReviewsOf(w, s), DENY]) === 'ok' ? list(rules.listsReview(w, s)) : DENY),
  },
  review: { scopes: DR, target: 'review', expect: (w, s) => check([rules.canViewReview(w, s), DENY]) },
  moderationQueue: { scopes: DR, target: 'none', expect: (w) => check([rules.moderates(w), DENY]) },
  auditLog: { scopes: DR, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  filesConnection: { scopes: DR, target: 'file', expect: (w, s) => (rules.canViewDownload(w, s) ? 'listed' : DENY) },
  // Daily statistics: for those who may edit the download.
  downloadStats: {
    scopes: DR,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  // the operator's queries (admin rights and any write scope)
  users: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  apiKeys: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  groups: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  prefixes: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  effectivePermissions: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  // mutations: categories (admin rights)
  createCategory: { scopes: CW, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  updateCategory: { scopes: CW, target: 'category', expect: (w) => check([rules.adminRights(w), DENY]) },
  deleteCategory: {
    scopes: CWH,
    target: 'category',
    destructive: true,
    expect: (w) => check([rules.adminRights(w), DENY]),
  },
  // users, keys, permissions, prefixes (admin rights)
  createUser: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  setUserGroups: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  createApiKey: { scopes: ANY_WRITE, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  revokeApiKey: {
    scopes: ANY_WRITE,
    target: 'none',
    destructive: true,
    expect: (w) => check([rules.adminRights(w), DENY]),
  },
  setGroupPermission: { scopes: CW, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  setCategoryPermission: { scopes: CW, target: 'category', expect: (w) => check([rules.adminRights(w), DENY]) },
  createPrefix: { scopes: CW, target: 'none', expect: (w) => check([rules.adminRights(w), DENY]) },
  assignPrefix: { scopes: CW, target: 'category', expect: (w) => check([rules.adminRights(w), DENY]) },
  // downloads
  createDownload: {
    scopes: DW,
    target: 'category',
    expect: (w, c) => check([rules.canAddDownload(w, c), DENY], [!rules.isGuest(w), DENY]),
  },
  updateDownload: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  deleteDownload: {
    scopes: DW,
    target: 'download',
    destructive: true,
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canDeleteDownload(w, s), DENY]),
  },
  restoreDownload: {
    scopes: DW,
    target: 'download',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewDownload(w, s), DENY],
        [rules.canRestoreDownload(w, s), DENY],
        [objectOf(s).state === 'deleted', 'mc_dm_api_error.download_not_deleted'],
      ),
  },
  createVersion: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  // versions (the target state is the version's download's): the rules of the download's files
  updateVersion: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  deleteVersion: {
    scopes: DW,
    target: 'download',
    destructive: true,
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  // The fixtures' versions are visible: whoever may edit them is told there is nothing to restore.
  restoreVersion: {
    scopes: DW,
    target: 'download',
    expect: (w, s) =>
      check(
        [rules.canViewDownload(w, s), DENY],
        [rules.canEditDownload(w, s), DENY],
        [false, 'mc_dm_api_error.version_not_deleted'],
      ),
  },
  addTeamMember: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canManageTeam(w, s), DENY]),
  },
  removeTeamMember: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canManageTeam(w, s), DENY]),
  },
  // comments (the target state is the comment's)
  createComment: {
    scopes: DW,
    target: 'download',
    expect: (w, s) =>
      check(
        [w.isSuper || (rules.canViewDownload(w, s) && rules.canViewCommentsOf(w, s)), DENY],
        [w.isSuper || rules.canComment(w, s), DENY],
        [!rules.isGuest(w), DENY],
      ),
  },
  updateComment: {
    scopes: DW,
    target: 'comment',
    expect: (w, s) => check([rules.canViewComment(w, s), DENY], [rules.canEditComment(w, s), DENY]),
  },
  deleteComment: {
    scopes: DW,
    target: 'comment',
    destructive: true,
    expect: (w, s) => check([rules.canViewComment(w, s), DENY], [rules.canDeleteComment(w, s), DENY]),
  },
  // moderation: approve and reject what is moderated (a success changes the state)
  approveDownload: {
    scopes: DW,
    target: 'download',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewDownload(w, s), DENY],
        [rules.canApproveDownload(w, s), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.download_not_moderated'],
      ),
  },
  rejectDownload: {
    scopes: DW,
    target: 'download',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewDownload(w, s), DENY],
        [rules.canRejectDownload(w, s), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.download_not_moderated'],
      ),
  },
  approveComment: {
    scopes: DW,
    target: 'comment',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewComment(w, s), DENY],
        [rules.canApproveComment(w, s), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.comment_not_moderated'],
      ),
  },
  rejectComment: {
    scopes: DW,
    target: 'comment',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewComment(w, s), DENY],
        [rules.canRejectComment(w, s), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.comment_not_moderated'],
      ),
  },
  // reports: any registered visitor who can view the content; moderators resolve (a success closes the report)
  reportContent: {
    scopes: DW,
    target: 'download',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [!rules.isGuest(w), DENY]),
  },
  resolveReport: {
    scopes: DW,
    target: 'none',
    destructive: true,
    expect: (w) => check([rules.moderates(w), DENY]),
  },
  // reviews (createReview's target is the download reviewed; the others' the review's state)
  createReview: {
    scopes: DW,
    target: 'download',
    expect: (w, s) =>
      check(
        [rules.canViewDownload(w, s), DENY],
        [!rules.isGuest(w), DENY],
        [w.isSuper || has(w, 'review', objectOf(s).category), DENY],
        [!owns(w, objectOf(s)), 'mc_dm_api_error.cannot_review_own_download'],
      ),
  },
  updateReview: {
    scopes: DW,
    target: 'review',
    expect: (w, s) => check([rules.canViewReview(w, s), DENY], [rules.canEditReview(w, s), DENY]),
  },
  deleteReview: {
    scopes: DW,
    target: 'review',
    destructive: true,
    expect: (w, s) => check([rules.canViewReview(w, s), DENY], [rules.canDeleteReview(w, s), DENY]),
  },
  approveReview: {
    scopes: DW,
    target: 'review',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewReview(w, s), DENY],
        [w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canEditReview(w, s)), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.review_not_moderated'],
      ),
  },
  rejectReview: {
    scopes: DW,
    target: 'review',
    destructive: true,
    expect: (w, s) =>
      check(
        [rules.canViewReview(w, s), DENY],
        [w.isSuper || (has(w, 'viewModerated', objectOf(s).category) && rules.canDeleteReview(w, s)), DENY],
        [objectOf(s).state === 'moderated', 'mc_dm_api_error.review_not_moderated'],
      ),
  },
  replyToReview: {
    scopes: DW,
    target: 'review',
    destructive: true,
    expect: (w, s) => check([rules.canViewReview(w, s), DENY], [w.isSuper, DENY]),
  },
  // files (the target state is the file's download's): managing files = editing the download
  createFile: {
    scopes: DW,
    target: 'file',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  updateFile: {
    scopes: DW,
    target: 'file',
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  deleteFile: {
    scopes: DW,
    target: 'file',
    destructive: true,
    expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canEditDownload(w, s), DENY]),
  },
  // webhooks: the shared one is alice's (target none); a super-user key acting as no user manages every webhook
  webhooks: {
    scopes: DW,
    target: 'none',
    expect: (w) => (check([!ownsNothing(w), DENY]) === 'ok' ? list(managesAlices(w)) : DENY),
  },
  webhook: { scopes: DW, target: 'none', expect: (w) => check([!ownsNothing(w), DENY], [managesAlices(w), HOOK_404]) },
  webhookDeliveries: {
    scopes: DW,
    target: 'none',
    expect: (w) => check([!ownsNothing(w), DENY], [managesAlices(w), HOOK_404]),
  },
  // A super-user key or an administrator may watch anything; other users a download they can edit.
  createWebhook: {
    scopes: DW,
    target: 'download',
    expect: (w, s) =>
      check(
        [!ownsNothing(w), DENY],
        [rules.canViewDownload(w, s), DENY],
        [w.isSuper || w.isAdmin || rules.canEditDownload(w, s), DENY],
      ),
  },
  updateWebhook: {
    scopes: DW,
    target: 'none',
    expect: (w) => check([!ownsNothing(w), DENY], [managesAlices(w), HOOK_404]),
  },
  deleteWebhook: {
    scopes: DW,
    target: 'none',
    destructive: true,
    expect: (w) => check([!ownsNothing(w), DENY], [managesAlices(w), HOOK_404]),
  },
  // The shared webhook is inactive: its owner is told so.
  redeliverWebhook: {
    scopes: DW,
    target: 'none',
    expect: (w) =>
      check(
        [!ownsNothing(w), DENY],
        [managesAlices(w), 'mc_dm_api_error.webhook_delivery_not_found'],
        [false, 'mc_dm_api_error.webhook_inactive'],
      ),
  },
};

/** The guest visitor (a guest key) owns no webhook and may not create one. */
const ownsNothing = (w: Who) => w.as === 'guest' && !w.isSuper;
/** Alice's webhooks are managed by alice (her key, or the super-user key acting as her) and the bare super-user key. */
const managesAlices = (w: Who) => w.as === 'alice' || (w.isSuper && w.as === 'guest');
const HOOK_404 = 'mc_dm_api_error.webhook_not_found';

/** The file bytes, served outside GraphQL: view and download permissions. A link-only file answers 302. */
export const fileData: Row = {
  scopes: DR,
  target: 'file',
  expect: (w, s) => check([rules.canViewDownload(w, s), DENY], [rules.canDownload(w, s), DENY]),
};

/** Every REST route, by `METHOD path`, and the GraphQL field whose row it follows. */
export const restRoutes: Record<string, string> = {
  'GET /api/mc-dm-categories/': 'categories',
  'GET /api/mc-dm-categories/:category_id/': 'category',
  'POST /api/mc-dm-categories/': 'createCategory',
  'PUT /api/mc-dm-categories/:category_id/': 'updateCategory',
  'DELETE /api/mc-dm-categories/:category_id/': 'deleteCategory',
  'GET /api/mc-dm-downloads/': 'downloads',
  'GET /api/mc-dm-downloads/:download_id/': 'download',
  'POST /api/mc-dm-downloads/': 'createDownload',
  'PUT /api/mc-dm-downloads/:download_id/': 'updateDownload',
  'DELETE /api/mc-dm-downloads/:download_id/': 'deleteDownload',
  'GET /api/mc-dm-comments/': 'comments',
  'GET /api/mc-dm-comments/:comment_id/': 'comment',
  'POST /api/mc-dm-comments/': 'createComment',
  'PUT /api/mc-dm-comments/:comment_id/': 'updateComment',
  'DELETE /api/mc-dm-comments/:comment_id/': 'deleteComment',
  'GET /api/mc-dm-versions/': 'versions',
  'GET /api/mc-dm-versions/:version_id/': 'version',
  'POST /api/mc-dm-versions/': 'createVersion',
  'PUT /api/mc-dm-versions/:version_id/': 'updateVersion',
  'DELETE /api/mc-dm-versions/:version_id/': 'deleteVersion',
  'GET /api/mc-dm-versions/:version_id/dependencies/': 'resolveDependencies',
  'POST /api/mc-dm-updates/': 'updates',
  'GET /api/mc-dm-files/': 'files',
  'GET /api/mc-dm-files/:file_id/': 'file',
  'POST /api/mc-dm-files/': 'createFile',
  'PUT /api/mc-dm-files/:file_id/': 'updateFile',
  'DELETE /api/mc-dm-files/:file_id/': 'deleteFile',
  'GET /api/mc-dm-files/:file_id/data/': 'fileData',
  'POST /api/mc-dm-downloads/:download_id/approve/': 'approveDownload',
  'POST /api/mc-dm-downloads/:download_id/reject/': 'rejectDownload',
  'POST /api/mc-dm-comments/:comment_id/approve/': 'approveComment',
  'POST /api/mc-dm-comments/:comment_id/reject/': 'rejectComment',
  'GET /api/mc-dm-audit-log/': 'auditLog',
  'GET /api/mc-dm-reviews/': 'reviews',
  'GET /api/mc-dm-reviews/:review_id/': 'review',
  'POST /api/mc-dm-reviews/': 'createReview',
  'PUT /api/mc-dm-reviews/:review_id/': 'updateReview',
  'DELETE /api/mc-dm-reviews/:review_id/': 'deleteReview',
  'POST /api/mc-dm-reviews/:review_id/reply/': 'replyToReview',
  'POST /api/mc-dm-reviews/:review_id/approve/': 'approveReview',
  'POST /api/mc-dm-reviews/:review_id/reject/': 'rejectReview',
  'GET /api/mc-dm-webhooks/': 'webhooks',
  'GET /api/mc-dm-webhooks/:webhook_id/': 'webhook',
  'POST /api/mc-dm-webhooks/': 'createWebhook',
  'PUT /api/mc-dm-webhooks/:webhook_id/': 'updateWebhook',
  'DELETE /api/mc-dm-webhooks/:webhook_id/': 'deleteWebhook',
  'GET /api/mc-dm-downloads/:download_id/stats/': 'downloadStats',
};

/** The scopes a key of scope set `set` holds for a row. */
export function scopesFor(row: Row, set: ScopeSet): Scope[] {
  if (set === 'all') return [...ALL_SCOPES];
  if (row.scopes === ANY_WRITE) {
    return set === 'exactly' ? ['mc_dm_category:write'] : ALL_SCOPES.filter((s) => !s.endsWith(':write'));
  }
  const needed = row.scopes;
  if (set === 'exactly') return needed.length ? [...needed] : ['mc_dm_download:read'];
  const rest = ALL_SCOPES.filter((s) => !needed.includes(s));
  return rest;
}

/** The full expectation: a scope missing from the key answers api_scope_missing before anything else. */
export function expected(row: Row, actor: Actor, set: ScopeSet, state: string): Outcome {
  const needsScope = row.scopes === ANY_WRITE || row.scopes.length > 0;
  if (set === 'none' && needsScope) return 'api_scope_missing';
  return row.expect(WHO[actor], state);
}
