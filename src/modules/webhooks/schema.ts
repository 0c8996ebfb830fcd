// Webhook: where the service POSTs the events a user or a super-user key watches (src/jobs/events.ts delivers them).
// Every field needs mc_dm_download:write: webhooks are an integration's settings, and their secrets sign its input.
import type { Webhook, WebhookAttempt, WebhookDelivery } from '../../generated/prisma/client.js';
import { LIMITS } from '../../config.js';
import { builder, unix } from '../../graphql/builder.js';
import { listOf, pageArgs } from '../../graphql/pagination.js';
import { connectionOf } from '../../graphql/connections.js';
import { deletePayloadOf, payloadOf } from '../../graphql/payloads.js';
import { invalidInput } from '../../errors.js';
import { EVENT_TYPES } from '../../db/outbox.js';
import * as webhooks from './rules.js';
import { NodeRef, registerNode } from '../../graphql/node.js';

const WRITE = ['mc_dm_download:write'];
const EVENTS = `${EVENT_TYPES.join(', ')}`;

export const WebhookRef = builder.objectRef<Webhook>('Webhook').implement({
  interfaces: [NodeRef],
  description:
    "Where events are POSTed, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) with the webhook's secret. Owned by the user who created it, or by the super-user key that created it acting as no user. An event goes to it only if its owner may view the object when it is delivered.",
  fields: (t) => ({
    webhookId: t.exposeInt('id', { description: 'The numeric webhook id (the REST API’s `webhook_id`).' }),
    url: t.exposeString('url', {
      description: `Where deliveries are POSTed: https (http only with EXTERNAL_URL_ALLOW_PRIVATE=1), at most ${LIMITS.maxWebhookUrl} characters, on a public address.`,
    }),
    events: t.exposeStringList('events', {
      description: `The event types it receives (${EVENTS}), or ["*"] for all.`,
    }),
    categoryId: t.int({
      description: 'Only events of downloads in this category or its descendants; 0 when not limited to one.',
      resolve: (w) => w.categoryId ?? 0,
    }),
    downloadId: t.int({
      description: 'Only events of this download; 0 when not limited to one.',
      resolve: (w) => w.downloadId ?? 0,
    }),
    active: t.exposeBoolean('active', {
      description:
        'Whether events are delivered to it. A webhook whose deliveries have failed for 3 days without a success is deactivated.',
    }),
    ownerUserId: t.exposeInt('ownerUserId', { description: 'The user who owns it; 0 when a super-user key owns it.' }),
    createdDate: t.int({ description: 'When it was created, in Unix seconds.', resolve: (w) => unix(w.createdAt) }),
    failingSince: t.int({
      description: 'When its current run of failed deliveries began, in Unix seconds; 0 when the last one succeeded.',
      resolve: (w) => unix(w.failingSince),
    }),
  }),
});

const DeliveryStatusEnum = builder.enumType('WebhookDeliveryStatus', {
  description: 'Where a delivery stands.',
  values: {
    PENDING: { value: 'pending', description: 'Waiting for its first attempt or for a retry.' },
    DELIVERED: { value: 'delivered', description: 'The receiver answered 2xx.' },
    FAILED: { value: 'failed', description: 'Every attempt of the retry schedule failed.' },
    SKIPPED: {
      value: 'skipped',
      description: 'Not sent: the owner could not view the object at delivery time, or the webhook was inactive.',
    },
  } as const,
});

const WebhookAttemptRef = builder.objectRef<WebhookAttempt>('WebhookAttempt').implement({
  description: 'One POST of a delivery.',
  fields: (t) => ({
    attemptedDate: t.int({ description: 'When it was sent, in Unix seconds.', resolve: (a) => unix(a.attemptedAt) }),
    httpStatus: t.int({
      nullable: true,
      description: "The receiver's HTTP status; null when no answer came.",
      resolve: (a) => a.status,
    }),
    durationMs: t.exposeInt('durationMs', { description: 'How long it took, in milliseconds.' }),
    error: t.string({
      nullable: true,
      description:
        'Why it failed (no answer within 10 s, an answer over 64 KiB, a redirect, a status outside 2xx…); null when it succeeded.',
      resolve: (a) => a.error,
    }),
  }),
});

export const WebhookDeliveryRef = builder.objectRef<WebhookDelivery>('WebhookDelivery').implement({
  description:
    'One event for one webhook, with its attempts. Retries follow the schedule ≈5 s, 30 s, 2 min, 10 min, 1 h, 6 h; then it is failed.',
  fields: (t) => ({
    deliveryId: t.exposeInt('id', { description: 'The numeric delivery id (redeliverWebhook takes it).' }),
    webhookId: t.exposeInt('webhookId', { description: 'The webhook it goes to.' }),
    messageId: t.string({
      description: 'The webhook-id header of every attempt of this event to this webhook (retries and redeliveries).',
      resolve: (d) => `evt_${d.eventId}_${d.webhookId}`,
    }),
    eventType: t.exposeString('type', { description: `The event type (${EVENTS}).` }),
    objectId: t.exposeInt('objectId', { description: 'The id of the object the type names.' }),
    downloadId: t.exposeInt('downloadId', { description: 'The download the object belongs to.' }),
    eventDate: t.int({ description: 'When the change committed, in Unix seconds.', resolve: (d) => unix(d.eventAt) }),
    status: t.field({ type: DeliveryStatusEnum, description: 'Where it stands.', resolve: (d) => d.status as never }),
    attemptCount: t.exposeInt('attempts', { description: 'Attempts made so far.' }),
    nextAttemptDate: t.int({
      description: 'When the next attempt is due, in Unix seconds; 0 once it is delivered, failed or skipped.',
      resolve: (d) => (d.status === 'pending' ? unix(d.nextAttemptAt) : 0),
    }),
    lastHttpStatus: t.int({
      nullable: true,
      description: "The last attempt's HTTP status; null when none answered.",
      resolve: (d) => d.lastStatus,
    }),
    lastError: t.string({
      nullable: true,
      description: 'Why the last attempt failed, or why it was skipped; null after a success.',
      resolve: (d) => d.lastError,
    }),
    attempts: t.field({
      type: [WebhookAttemptRef],
      description: `Its attempts, oldest first: the first \`first\` (default ${LIMITS.defaultPageSize}, at most ${LIMITS.maxPageSize}).`,
      args: {
        first: t.arg.int({
          required: false,
          description: `How many (default ${LIMITS.defaultPageSize}, larger values are clamped to ${LIMITS.maxPageSize}).`,
        }),
      },
      resolve: (d, args, ctx) => {
        const first = args.first ?? LIMITS.defaultPageSize;
        if (!Number.isInteger(first) || first < 1)
          throw invalidInput('first', `first must be a whole number of 1 or more, got ${first}.`);
        return ctx.prisma.webhookAttempt.findMany({
          where: { deliveryId: d.id },
          orderBy: { id: 'asc' },
          take: Math.min(first, LIMITS.maxPageSize),
        });
      },
    }),
  }),
});

const WebhookList = listOf('Webhook', WebhookRef);
const WebhookDeliveryConnection = connectionOf<WebhookDelivery>('WebhookDelivery', WebhookDeliveryRef, 'delivery');

builder.queryFields((t) => ({
  webhooks: t.field({
    type: WebhookList,
    description:
      'Webhooks, oldest first: every one for a super-user key acting as no user, else the visitor’s own. Needs mc_dm_download:write. Secrets are never shown again.',
    authScopes: { scope: WRITE },
    args: { page: pageArgs(t.arg).page, perPage: pageArgs(t.arg).perPage },
    resolve: async (_r, args, ctx) => webhooks.listWebhooks(ctx.prisma, await ctx.access(), args),
  }),
  webhook: t.field({
    type: WebhookRef,
    nullable: true,
    description:
      'One webhook the visitor owns (any, for a super-user key acting as no user). Needs mc_dm_download:write. Others answer mc_dm_api_error.webhook_not_found.',
    authScopes: { scope: WRITE },
    args: { webhookId: t.arg.int({ required: true, description: 'The numeric webhook id.' }) },
    resolve: async (_r, args, ctx) => webhooks.ownWebhook(ctx.prisma, await ctx.access(), args.webhookId),
  }),
  webhookDeliveries: t.field({
    type: WebhookDeliveryConnection,
    nullable: true,
    description:
      'The deliveries of a webhook, newest first (Relay cursor connection; totalCount counts them all). Needs mc_dm_download:write and the webhook. Delivered and failed deliveries are kept 7 days. Errors: mc_dm_api_error.webhook_not_found, invalid_input (first, after).',
    authScopes: { scope: WRITE },
    args: {
      webhookId: t.arg.int({ required: true, description: 'The webhook.' }),
      first: t.arg.int({
        required: false,
        description: `Rows from the start (or after \`after\`): default ${LIMITS.defaultPageSize}, larger values than ${LIMITS.maxPageSize} are clamped; 0 or less is refused.`,
      }),
      after: t.arg.string({ required: false, description: 'pageInfo.endCursor of the page before.' }),
    },
    resolve: async (_r, args, ctx) =>
      webhooks.listDeliveries(ctx.prisma, ctx.cursors, await ctx.access(), args) as never,
  }),
}));

const CreateWebhookInput = builder.inputType('CreateWebhookInput', {
  description: 'A new webhook, owned by the visitor.',
  fields: (t) => ({
    url: t.string({
      required: true,
      description: `Where to POST: https (http only with EXTERNAL_URL_ALLOW_PRIVATE=1), at most ${LIMITS.maxWebhookUrl} characters, not a private or reserved address (mc_dm_api_error.external_url_forbidden).`,
    }),
    events: t.stringList({
      required: true,
      description: `Event types (${EVENTS}), or "*" for all. Unknown types answer invalid_input naming them (params.unknown).`,
    }),
    categoryId: t.int({
      required: false,
      description: 'Only events of downloads in this category or below it (super-user keys and administrators).',
    }),
    downloadId: t.int({
      required: false,
      description:
        'Only events of this download. Required for users who are not administrators: a download they can edit.',
    }),
    active: t.boolean({ required: false, description: 'Whether events are delivered (default true).' }),
  }),
});
const UpdateWebhookInput = builder.inputType('UpdateWebhookInput', {
  description: 'A webhook and the fields to change; omitted fields are kept.',
  fields: (t) => ({
    webhookId: t.int({ required: true, description: 'The webhook to change.' }),
    url: t.string({ required: false, description: 'A new URL (the rules of createWebhook).' }),
    events: t.stringList({ required: false, description: `New event types (${EVENTS}), or "*".` }),
    categoryId: t.int({ required: false, description: 'A new category filter; 0 removes it.' }),
    downloadId: t.int({ required: false, description: 'A new download filter; 0 removes it.' }),
    active: t.boolean({
      required: false,
      description: 'false pauses deliveries; true resumes them (and forgets the failures so far).',
    }),
  }),
});
const DeleteWebhookInput = builder.inputType('DeleteWebhookInput', {
  description: 'The webhook to delete, with its deliveries.',
  fields: (t) => ({ webhookId: t.int({ required: true, description: 'The webhook to delete.' }) }),
});
const RedeliverWebhookInput = builder.inputType('RedeliverWebhookInput', {
  description: 'A delivery to send again.',
  fields: (t) => ({ deliveryId: t.int({ required: true, description: 'The delivery whose event to send again.' }) }),
});

const CreateWebhookPayload = builder.objectRef<{ webhook: Webhook; secret: string }>('CreateWebhookPayload').implement({
  description: 'What createWebhook returns: the webhook and its secret, shown this once.',
  fields: (t) => ({
    webhook: t.field({ type: WebhookRef, description: 'The new webhook.', resolve: (p) => p.webhook }),
    secret: t.exposeString('secret', {
      description:
        'The signing secret (whsec_…, for the Standard Webhooks libraries): shown only here; keep it to verify deliveries.',
    }),
  }),
});
const UpdateWebhookPayload = payloadOf<Webhook>('UpdateWebhookPayload', 'webhook', WebhookRef);
const DeleteWebhookPayload = deletePayloadOf<Webhook>('DeleteWebhookPayload', 'webhook', WebhookRef);
const RedeliverWebhookPayload = payloadOf<WebhookDelivery>(
  'RedeliverWebhookPayload',
  'delivery',
  WebhookDeliveryRef,
  'What `redeliverWebhook` returns: the new delivery of the same event (the same webhook-id), due at once.',
);

builder.mutationFields((t) => ({
  createWebhook: t.field({
    nullable: true,
    description:
      'Creates a webhook owned by the visitor and returns its secret, once. Needs mc_dm_download:write. A super-user key or an administrator may watch anything; other users one download they can edit (downloadId). Errors: invalid_input (url over 2000 characters, unknown events), required_input_missing, mc_dm_api_error.external_url_forbidden (not https, a private or reserved address), mc_dm_api_error.external_url_unreachable (the host does not resolve), mc_dm_api_error.category_not_found, mc_dm_api_error.download_not_found, mc_dm_api_error.too_many_webhooks, do_not_have_permission.',
    type: CreateWebhookPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateWebhookInput, required: true, description: 'The new webhook.' }) },
    resolve: async (_r, { input }, ctx) =>
      webhooks.createWebhook(
        ctx.prisma,
        await ctx.access(),
        ctx.team,
        ctx.config.externalUrlAllowPrivate,
        input as webhooks.CreateWebhookInput,
      ),
  }),
  updateWebhook: t.field({
    nullable: true,
    description:
      'Changes a webhook the visitor owns. Needs mc_dm_download:write. Errors: those of createWebhook, mc_dm_api_error.webhook_not_found.',
    type: UpdateWebhookPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateWebhookInput, required: true, description: 'The webhook and its changes.' }) },
    resolve: async (_r, { input }, ctx) => ({
      webhook: await webhooks.updateWebhook(
        ctx.prisma,
        await ctx.access(),
        ctx.team,
        ctx.config.externalUrlAllowPrivate,
        input,
      ),
    }),
  }),
  deleteWebhook: t.field({
    nullable: true,
    description:
      'Deletes a webhook the visitor owns, with its deliveries. Needs mc_dm_download:write. Errors: mc_dm_api_error.webhook_not_found.',
    type: DeleteWebhookPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteWebhookInput, required: true, description: 'The webhook.' }) },
    resolve: async (_r, { input }, ctx) => {
      await webhooks.deleteWebhook(ctx.prisma, await ctx.access(), input.webhookId);
      return { success: true as const, typeName: 'Webhook', id: input.webhookId, object: null };
    },
  }),
  redeliverWebhook: t.field({
    nullable: true,
    description:
      'Sends the event of a delivery again, as a new delivery with the same webhook-id, due at once. Needs mc_dm_download:write and the webhook. Errors: mc_dm_api_error.webhook_delivery_not_found, mc_dm_api_error.webhook_inactive.',
    type: RedeliverWebhookPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RedeliverWebhookInput, required: true, description: 'The delivery.' }) },
    resolve: async (_r, { input }, ctx) => {
      const delivery = await webhooks.redeliver(ctx.prisma, await ctx.access(), input.deliveryId);
      ctx.events.written(); // wakes the dispatcher: the delivery is due now
      return { delivery };
    },
  }),
}));

// A webhook through node(id): its owner (or a super-user key or admin), as webhook(webhookId:) reads it.
registerNode('Webhook', WRITE, async (ctx, id) => webhooks.ownWebhook(ctx.prisma, await ctx.access(), id));
