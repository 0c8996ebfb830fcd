// Permission names and built-in group defaults (contract §3).

export const PERMISSIONS = [
  'view',
  'viewComments',
  'download',
  'add',
  'comment',
  'editOwn',
  'editAny',
  'deleteOwn',
  'deleteAny',
  'hardDeleteAny',
  'moveAny',
  'bypassApproval',
  'bypassCommentApproval',
  'viewModerated',
  'viewDeleted',
  'editOwnComment',
  'editAnyComment',
  'deleteOwnComment',
  'deleteAnyComment',
  'review',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(name: string): name is Permission {
  return (PERMISSIONS as readonly string[]).includes(name);
}

const GUEST: Permission[] = ['view', 'viewComments', 'download'];
const REGISTERED: Permission[] = [
  ...GUEST,
  'add',
  'comment',
  'editOwn',
  'deleteOwn',
  'editOwnComment',
  'deleteOwnComment',
  'review',
];

/** The four built-in groups and the permissions each holds globally when first created. */
export const BUILT_IN_GROUPS: Record<'guest' | 'registered' | 'moderator' | 'administrator', readonly Permission[]> = {
  guest: GUEST,
  registered: REGISTERED,
  moderator: PERMISSIONS, // registered + every other permission
  administrator: PERMISSIONS,
};

export const SCOPES = [
  'mc_dm_category:read',
  'mc_dm_category:write',
  'mc_dm_category:delete_hard',
  'mc_dm_download:read',
  'mc_dm_download:write',
  'mc_dm_download:delete_hard',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(name: string): name is Scope {
  return (SCOPES as readonly string[]).includes(name);
}
