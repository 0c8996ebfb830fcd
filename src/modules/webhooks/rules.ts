// Webhook rules: who may manage which webhook, what a webhook may watch, its URL (the SSRF rules of external URLs),
// its events, and the writes. Plain functions over Prisma; resolvers stay short.
import crypto from 'node:crypto';
import dns from 'node:dns/promises';
import net from 'node:net';
import { LIMITS } from '../../config.js';
import type { Prisma, PrismaClient, Webhook, WebhookDelivery } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { EVENT_TYPES } from '../../db/outbox.js';
import { ExternalUrlError, parseExternalUrl, refusalFor } from '../../files/external/index.js';
import { pageWindow, paginationOf, type Page, type PageRequest } from '../../db/lists.js';
import { viewableDownload, type TeamLookup } from '../downloads/index.js';
import type { CursorSeal } from '../../db/keyset.js';

export const webhookNotFound = (id: number) =>
  new ApiError('mc_dm_api_error.webhook_not_found', `The requested webhook (${id}) could not be found.`, {
    webhook_id: id,
  });
export const deliveryNotFound = (id: number) =>
  new ApiError(
    'mc_dm_api_error.webhook_delivery_not_found',
    `The requested webhook delivery (${id}) could not be found.`,
    {
      delivery_id: id,
    },
  );

/** Who owns what the visitor creates: the acting user, or the super-user key itself when it acts as no user. */
export function ownerOf(access: Access): { ownerUserId: number; ownerApiKeyId: number | null } {
  const v = access.visitor;
  if (v.userId !== 0) return { ownerUserId: v.userId, ownerApiKeyId: null };
  if (v.isSuper) return { ownerUserId: 0, ownerApiKeyId: v.apiKeyId };
  throw new ApiError(
    'do_not_have_permission',
    'Guests cannot own webhooks: use a user key, or a super-user key (acting as a user or not).',
  );
}

/** The webhooks the visitor sees: every one for a super-user key acting as no user, else the visitor's own. */
function ownedWhere(access: Access): Prisma.WebhookWhereInput {
  const v = access.visitor;
  if (v.isSuper && v.userId === 0) return {};
  return ownerOf(access);
}

/** A webhook the visitor may manage; others answer webhook_not_found (their existence is nobody else's business). */
export async function ownWebhook(prisma: PrismaClient, access: Access, id: number): Promise<Webhook> {
  const hook = await prisma.webhook.findFirst({ where: { id, ...ownedWhere(access) } });
  if (!hook) throw webhookNotFound(id);
  return hook;
}

/** The event types, checked: a list of known types, or `*` alone. Unknown ones answer invalid_input naming them. */
export function checkEvents(events: readonly string[]): string[] {
  const list = [...new Set(events.map((e) => e.trim()))];
  if (list.length === 0 || list.includes('')) throw invalidInput('events', 'events must list event types, or `*`.');
  const unknown = list.filter((e) => e !== '*' && !(EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0) {
    throw new ApiError(
      'invalid_input',
      `Unknown event type(s): ${unknown.slice(0, 20).join(', ')}. Known: ${EVENT_TYPES.join(', ')}, or *.`,
      { field: 'events', unknown: unknown.slice(0, 20) },
    );
  }
  return list.includes('*') ? ['*'] : list;
}

/**
 * A webhook URL: at most LIMITS.maxWebhookUrl characters, https (http only with EXTERNAL_URL_ALLOW_PRIVATE=1), no
 * credentials, and a host whose every address is outside the special-purpose ranges (unless allowed). Deliveries
 * check the address again as they connect (src/jobs/webhook-send.ts).
 */
export async function checkUrl(raw: string, allowPrivate: boolean): Promise<string> {
  const value = raw.trim();
  if (!value) throw requiredMissing(['url']);
  if (value.length > LIMITS.maxWebhookUrl)
    throw invalidInput('url', `url must be at most ${LIMITS.maxWebhookUrl} characters, got ${value.length}.`);
  const forbidden = (message: string) =>
    new ApiError('mc_dm_api_error.external_url_forbidden', message, { field: 'url' });
  let url: URL;
  try {
    url = parseExternalUrl(value);
  } catch (err) {
    if (err instanceof ExternalUrlError) throw forbidden(err.message);
    throw err;
  }
  if (url.protocol !== 'https:' && !allowPrivate)
    throw forbidden('Webhook URLs must use https (http is accepted only with EXTERNAL_URL_ALLOW_PRIVATE=1).');
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (net.isIP(host)) addresses = [host];
    else {
      try {
        addresses = (await dns.lookup(host, { all: true })).map((a) => a.address);
      } catch {
        throw new ApiError('mc_dm_api_error.external_url_unreachable', `${url.hostname} cannot be resolved.`, {
          field: 'url',
        });
      }
    }
    for (const a of addresses) {
      const why = refusalFor(a);
      if (why) throw forbidden(`${url.hostname} is ${why}.`);
    }
  }
  return url.toString();
}

/**
 * What a webhook may watch. A super-user key or an administrator: anything. Anyone else: one download they can
 * edit (download_id required).
 */
async function checkTarget(
  prisma: PrismaClient,
  access: Access,
  team: TeamLookup,
  target: { categoryId: number | null; downloadId: number | null },
): Promise<void> {
  const anything = access.isSuper || access.visitor.isAdmin;
  if (target.categoryId !== null) {
    if (!(await prisma.category.findUnique({ where: { id: target.categoryId }, select: { id: true } })))
      throw notFound('category', target.categoryId);
    if (!anything) throw noPermission('watch a whole category (users watch downloads they can edit)');
  }
  if (target.downloadId !== null) {
    const d = await viewableDownload(prisma, access, target.downloadId);
    if (!anything && !access.canEditDownload(d, await team.isTeamMember(d.id)))
      throw noPermission('watch this download (users watch downloads they can edit)');
  } else if (!anything) {
    throw noPermission('watch every download: give download_id, a download you can edit');
  }
}

/** A new secret in the Standard Webhooks form: `whsec_` and 32 random bytes, base64. */
export const newSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;

export interface CreateWebhookInput {
  url: string;
  events: readonly string[];
  categoryId?: number | null;
  downloadId?: number | null;
  active?: boolean | null;
}

export async function createWebhook(
  prisma: PrismaClient,
  access: Access,
  team: TeamLookup,
  allowPrivate: boolean,
  input: CreateWebhookInput,
): Promise<{ webhook: Webhook; secret: string }> {
  const owner = ownerOf(access);
  const events = checkEvents(input.events);
  const url = await checkUrl(input.url, allowPrivate);
  const target = { categoryId: input.categoryId || null, downloadId: input.downloadId || null };
  await checkTarget(prisma, access, team, target);
  const count = await prisma.webhook.count({ where: owner });
  if (count >= LIMITS.maxWebhooksPerOwner) {
    throw new ApiError(
      'mc_dm_api_error.too_many_webhooks',
      `You have ${count} webhooks already, the most one owner may have.`,
      { max_webhooks: LIMITS.maxWebhooksPerOwner },
    );
  }
  const secret = newSecret();
  const webhook = await prisma.webhook.create({
    data: { ...owner, url, events, ...target, secret, active: input.active ?? true },
  });
  return { webhook, secret };
}

export interface UpdateWebhookInput {
  webhookId: number;
  url?: string | null;
  events?: readonly string[] | null;
  categoryId?: number | null;
  downloadId?: number | null;
  active?: boolean | null;
}

/** Omitted fields are kept; categoryId or downloadId 0 removes that filter. Activating clears the failure run. */
export async function updateWebhook(
  prisma: PrismaClient,
  access: Access,
  team: TeamLookup,
  allowPrivate: boolean,
  input: UpdateWebhookInput,
): Promise<Webhook> {
  const hook = await ownWebhook(prisma, access, input.webhookId);
  const data: Prisma.WebhookUpdateInput = {};
  if (input.events != null) data.events = checkEvents(input.events);
  if (input.url != null) data.url = await checkUrl(input.url, allowPrivate);
  const target = {
    categoryId: input.categoryId == null ? hook.categoryId : input.categoryId || null,
    downloadId: input.downloadId == null ? hook.downloadId : input.downloadId || null,
  };
  if (target.categoryId !== hook.categoryId || target.downloadId !== hook.downloadId) {
    await checkTarget(prisma, access, team, target);
    Object.assign(data, target);
  }
  if (input.active != null && input.active !== hook.active) {
    data.active = input.active;
    if (input.active) data.failingSince = null;
  }
  if (Object.keys(data).length === 0) return hook;
  return prisma.webhook.update({ where: { id: hook.id }, data });
}

export async function deleteWebhook(prisma: PrismaClient, access: Access, id: number): Promise<void> {
  const hook = await ownWebhook(prisma, access, id);
  await prisma.webhook.delete({ where: { id: hook.id } });
}

export async function listWebhooks(prisma: PrismaClient, access: Access, req: PageRequest): Promise<Page<Webhook>> {
  const w = pageWindow(req);
  const where = ownedWhere(access);
  const [nodes, total] = await Promise.all([
    prisma.webhook.findMany({ where, orderBy: { id: 'asc' }, skip: w.skip, take: w.take }),
    prisma.webhook.count({ where }),
  ]);
  return { nodes, pagination: paginationOf(w, total) };
}

/** One page of a webhook's deliveries, newest first, with sealed cursors (the delivery id). */
export async function listDeliveries(
  prisma: PrismaClient,
  cursors: CursorSeal,
  access: Access,
  args: { webhookId: number; first?: number | null; after?: string | null },
) {
  const hook = await ownWebhook(prisma, access, args.webhookId);
  const first = args.first ?? LIMITS.defaultPageSize;
  if (!Number.isInteger(first) || first < 1)
    throw invalidInput('first', `first must be a whole number from 1 to ${LIMITS.maxPageSize}, got ${first}.`);
  const take = Math.min(first, LIMITS.maxPageSize);
  let before: number | undefined;
  if (args.after != null) {
    const opened = cursors.open(args.after);
    const id = opened && opened.length === 5 && opened[0] === 0x77 ? opened.readUInt32BE(1) : undefined;
    if (id === undefined) throw invalidInput('after', 'after is not a cursor of this list.');
    before = id;
  }
  const where = { webhookId: hook.id, ...(before !== undefined ? { id: { lt: before } } : {}) };
  const [rows, totalCount] = await Promise.all([
    prisma.webhookDelivery.findMany({ where, orderBy: { id: 'desc' }, take: take + 1 }),
    prisma.webhookDelivery.count({ where: { webhookId: hook.id } }),
  ]);
  const page = rows.slice(0, take);
  const cursorOf = (d: WebhookDelivery) => {
    const b = Buffer.alloc(5);
    b[0] = 0x77;
    b.writeUInt32BE(d.id, 1);
    return cursors.seal(b);
  };
  const edges = page.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    totalCount,
    edges,
    pageInfo: {
      hasNextPage: rows.length > take,
      hasPreviousPage: before !== undefined,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges[edges.length - 1]?.cursor ?? null,
    },
  };
}

/**
 * Sends a delivery's event again: a new delivery of the same event (the same webhook-id), due at once, with its
 * own attempts and retries. The webhook must be active.
 */
export async function redeliver(prisma: PrismaClient, access: Access, deliveryId: number): Promise<WebhookDelivery> {
  const d = await prisma.webhookDelivery.findUnique({ where: { id: deliveryId } });
  if (!d) throw deliveryNotFound(deliveryId);
  let hook: Webhook;
  try {
    hook = await ownWebhook(prisma, access, d.webhookId);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'mc_dm_api_error.webhook_not_found') throw deliveryNotFound(deliveryId);
    throw err;
  }
  if (!hook.active) {
    throw new ApiError(
      'mc_dm_api_error.webhook_inactive',
      `Webhook ${hook.id} is inactive: activate it (active: true) before redelivering.`,
      { webhook_id: hook.id },
    );
  }
  return prisma.webhookDelivery.create({
    data: {
      webhookId: d.webhookId,
      eventId: d.eventId,
      type: d.type,
      objectId: d.objectId,
      downloadId: d.downloadId,
      eventAt: d.eventAt,
    },
  });
}
