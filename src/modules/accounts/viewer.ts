// `viewer`: the visitor the key acts as (never null; the guest included).
import { builder } from '../../graphql/builder.js';
import type { Visitor } from '../../permissions/access.js';

const ViewerRef = builder.objectRef<Visitor>('Viewer').implement({
  description:
    'Who the request acts as: the user bound to a USER key, the guest for a GUEST key, and for a SUPER key the user named in the Forum-Api-User header (the guest without it).',
  fields: (t) => ({
    userId: t.exposeInt('userId', { description: '0 for the guest visitor.' }),
    username: t.exposeString('username', { description: 'The display name; "Guest" for the guest visitor.' }),
    isGuest: t.boolean({
      description: 'True when acting as the guest (userId 0): guests cannot own downloads or post comments.',
      resolve: (v) => v.userId === 0,
    }),
    isSuperKey: t.exposeBoolean('isSuper', {
      description:
        'The request uses a super-user key: it passes every permission and admin check, but still needs the scope of each field.',
    }),
    isAdmin: t.exposeBoolean('isAdmin', {
      description: 'The user is an administrator (admin rights: category writes and the admin mutations).',
    }),
    isModerator: t.exposeBoolean('isModerator', {
      description:
        'The user is flagged moderator. Lists show every state to moderators, administrators and super-user keys.',
    }),
    apiKeyId: t.exposeInt('apiKeyId', { description: 'The numeric id of the API key the request uses.' }),
    scopes: t.stringList({
      description: 'The scopes the key holds, sorted (e.g. mc_dm_download:read).',
      resolve: (v) => [...v.scopes].sort(),
    }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    description: 'The visitor the API key acts as, with its flags and scopes. Never null; needs no scope.',
    resolve: (_r, _a, ctx) => ctx.visitor,
  }),
);
