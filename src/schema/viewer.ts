// `viewer`: the visitor the key acts as (never null; the guest included).
import { builder } from './builder.js';
import type { Visitor } from '../permissions/access.js';

const ViewerRef = builder.objectRef<Visitor>('Viewer').implement({
  fields: (t) => ({
    userId: t.exposeInt('userId', { description: '0 for the guest visitor.' }),
    username: t.exposeString('username'),
    isGuest: t.boolean({ resolve: (v) => v.userId === 0 }),
    isSuperKey: t.exposeBoolean('isSuper', { description: 'The request uses a super-user key.' }),
    isAdmin: t.exposeBoolean('isAdmin'),
    isModerator: t.exposeBoolean('isModerator'),
    apiKeyId: t.exposeInt('apiKeyId'),
    scopes: t.stringList({ resolve: (v) => [...v.scopes].sort() }),
  }),
});

builder.queryField('viewer', (t) => t.field({ type: ViewerRef, resolve: (_r, _a, ctx) => ctx.visitor }));
