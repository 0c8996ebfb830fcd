// Subscriptions (served over SSE by Yoga): a comment posted, a version released, a download changed.
// Subscribing checks the key's scope and the visitor's rights on what is watched, like the matching query.
// Events carry ids only (src/events.ts); at every event the key is looked up again (revoked, expired, missing
// scope: the stream ends with that error), the object is re-read through the domain's own read functions, and
// it is delivered only if this visitor may see it now. Revoking a key ends its streams at once, on every instance.
import type { GraphQLResolveInfo } from 'graphql';
import { Repeater, map } from 'graphql-yoga';
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Comment, Download, Version } from '../generated/prisma/client.js';
import { builder } from '../graphql/builder.js';
import { createContext, type Context } from '../graphql/context.js';
import { CommentRef } from './comments/index.js';
import { DownloadRef } from './downloads/index.js';
import { VersionRef } from './versions/index.js';
import { ApiError } from '../errors.js';
import { requireScopes } from '../auth/scopes.js';
import { visitorFromHeaders } from '../auth/visitor.js';
import * as comments from './comments/index.js';
import * as downloads from './downloads/index.js';
import { viewableCategory } from './categories/index.js';

const READ = ['mc_dm_download:read'];

/** One event for one subscriber: the object to deliver, or the error that ends the stream. */
type Delivery<T> = { value: T } | { error: unknown };
/** What an event means for this subscriber: the object, or null when it is not for them (now). Throws to end. */
type Check<T> = () => Promise<T | null>;

/** The request headers the stream was opened with (Yoga puts the request on the context). */
const headersOf = (ctx: Context): Headers => (ctx as Context & { request: Request }).request.headers;

/**
 * Re-reads the key and the visitor the stream was opened with, as a new request would (same caches), and gives the
 * context their current rights: the fields resolved for this event ask `ctx.access()` like any query does.
 */
async function refresh(ctx: Context, headers: Headers): Promise<void> {
  const visitor = await visitorFromHeaders(ctx, headers, ctx.groups, ctx.auth);
  requireScopes(visitor, READ);
  const fresh = createContext(ctx, visitor);
  Object.assign(ctx, { visitor: fresh.visitor, access: fresh.access, withAccess: fresh.withAccess, team: fresh.team });
}

/** Refusals that mean "not for you (now)" rather than "the stream is over". */
const isHidden = (err: unknown) =>
  err instanceof ApiError &&
  (err.code === 'do_not_have_permission' ||
    err.code === 'mc_dm_api_error.comment_not_found' ||
    err.code === 'mc_dm_api_error.version_not_found');

async function unlessHidden<T>(read: () => Promise<T | null>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (isHidden(err)) return null;
    throw err;
  }
}

/**
 * The stream a subscriber reads: every event of `sources`, checked one at a time when it arrives. A check that
 * throws (a revoked key, a download that no longer exists) is delivered as that error, then the stream ends.
 */
function live<T>(ctx: Context, sources: Repeater<Check<T>>[]): Repeater<Delivery<T>> {
  const headers = headersOf(ctx);
  const revoked = map(
    (): Check<T> => async () => {
      throw new ApiError('api_key_inactive', 'The API key of this subscription has been revoked.');
    },
  )(ctx.events.subscribe('apiKeyRevoked', ctx.visitor.apiKeyId));
  return new Repeater<Delivery<T>>(async (push, stop) => {
    const events = Repeater.merge([...sources, revoked]);
    stop.then(() => events.return());
    for await (const check of events) {
      let delivery: Delivery<T> | null;
      try {
        await refresh(ctx, headers);
        const value = await check();
        delivery = value === null ? null : { value };
      } catch (error) {
        delivery = { error };
      }
      if (delivery === null) continue;
      await push(delivery);
      if ('error' in delivery) break;
    }
    stop();
  });
}

const deliver = <T>(d: Delivery<T>): T => {
  if ('error' in d) throw d.error;
  return d.value;
};

/** What the operation selects on the delivered object, for the domain's read functions (as the root queries do). */
const selection = (ctx: Context, info: GraphQLResolveInfo, typeName: 'Comment' | 'Download' | 'Version') =>
  queryFromInfo({ context: ctx, info, typeName }) as object;

builder.subscriptionType({
  description:
    "Live events, over Server-Sent Events: send `Accept: text/event-stream` to /graphql (POST, or GET with the operation in `query`). Every event is re-checked against the key and the visitor's rights when it is delivered.",
});

builder.subscriptionFields((t) => ({
  commentPosted: t.field({
    type: CommentRef,
    description:
      "Comments posted on a download from now on. A comment awaiting approval reaches only its author and those who may view moderated comments. Needs mc_dm_download:read and the right to view the download's comments.",
    args: { downloadId: t.arg.int({ required: true, description: 'The download whose comments to watch.' }) },
    subscribe: async (_r, { downloadId }, ctx, info) => {
      requireScopes(ctx.visitor, READ);
      await comments.viewableParent(ctx.db, await ctx.access(), downloadId);
      const query = selection(ctx, info, 'Comment');
      return live<Comment>(ctx, [
        map(
          ({ commentId }: { commentId: number }): Check<Comment> =>
            () =>
              unlessHidden(async () => comments.viewableComment(ctx.prisma, await ctx.access(), commentId, query)),
        )(ctx.events.subscribe('commentPosted', downloadId)),
        // The stream ends when the download is gone for good (the check throws download_not_found).
        map(
          (): Check<Comment> => async () => {
            await unlessHidden(async () => downloads.viewableDownload(ctx.prisma, await ctx.access(), downloadId));
            return null;
          },
        )(ctx.events.subscribe('downloadChanged', downloadId)),
      ]);
    },
    resolve: deliver,
  }),
  versionReleased: t.field({
    type: VersionRef,
    description:
      "New versions from now on (a new download's first version included): of one download, of the downloads of one category (not its subcategories), both, or — with neither argument — of every download the visitor may view. Needs mc_dm_download:read.",
    args: {
      downloadId: t.arg.int({ required: false, description: 'Only versions of this download.' }),
      categoryId: t.arg.int({
        required: false,
        description:
          'Only versions of downloads in this category (where the download is when the version is delivered).',
      }),
    },
    subscribe: async (_r, { downloadId, categoryId }, ctx, info) => {
      requireScopes(ctx.visitor, READ);
      if (categoryId != null) await viewableCategory(ctx.prisma, await ctx.access(), categoryId);
      if (downloadId != null) await downloads.viewableDownload(ctx.prisma, await ctx.access(), downloadId);
      const query = selection(ctx, info, 'Version');
      return live<Version>(ctx, [
        map(
          (e: { versionId: number; downloadId: number }): Check<Version> =>
            () =>
              unlessHidden(async () => {
                if (downloadId != null && e.downloadId !== downloadId) return null;
                const d = await downloads.viewableDownload(ctx.prisma, await ctx.access(), e.downloadId);
                if (categoryId != null && d.categoryId !== categoryId) return null;
                return ctx.prisma.version.findUnique({ ...query, where: { id: e.versionId } });
              }).catch((err) => {
                // A download deleted since the release is simply not delivered; the stream goes on.
                if (err instanceof ApiError && err.code === 'mc_dm_api_error.download_not_found' && downloadId == null)
                  return null;
                throw err;
              }),
        )(ctx.events.subscribe('versionReleased')),
      ]);
    },
    resolve: deliver,
  }),
  downloadChanged: t.field({
    type: DownloadRef,
    description:
      'The download after each change from now on: an update that changed a field (moves included), a new version, a soft delete, a restore. Counters (views, downloads), files, team and comments do not count as changes. Delivered only while the visitor may view the download; after a permanent delete the stream ends with mc_dm_api_error.download_not_found. Needs mc_dm_download:read.',
    args: { downloadId: t.arg.int({ required: true, description: 'The download to watch.' }) },
    subscribe: async (_r, { downloadId }, ctx, info) => {
      requireScopes(ctx.visitor, READ);
      await downloads.viewableDownload(ctx.prisma, await ctx.access(), downloadId);
      const query = selection(ctx, info, 'Download');
      return live<Download>(ctx, [
        map(
          (): Check<Download> => () =>
            unlessHidden(async () => downloads.readDownload(ctx, await ctx.access(), downloadId, query)),
        )(ctx.events.subscribe('downloadChanged', downloadId)),
      ]);
    },
    resolve: deliver,
  }),
}));
