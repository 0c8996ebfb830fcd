// An event's object as the REST face shows it, to a webhook's owner: the route's own GET document (without
// `with=full`), run as the owner at delivery time, its result snake_cased and its enum values lower-cased like a REST
// answer. Null when the owner may not view it now (or it is gone): the dispatcher then skips the delivery
// (src/jobs/events.ts). The read is not a visitor's: it counts no view of a download.
import { execute, Kind, parse, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { createContext, type Services } from '../src/graphql/context.js';
import { toGlobalId } from '../src/graphql/node.js';
import type { Visitor } from '../src/permissions/access.js';
import type { Render, WebhookOwner } from '../src/jobs/events.js';
import * as ops from './generated/operations.js';
import { snakeKeys } from './envelope.js';
import { enumTree, lowerEnums, type EnumTree } from './enums.js';

/** A version has no GET route: its fields are the REST face's VersionFields, read through `node`. */
const GET_VERSION = parse(`query WebhookVersion($id: ID!) {
  node(id: $id) { ... on Version { versionId downloadId versionString releaseDate downloadCount versionState } }
}`);

const READ_SCOPES = new Set(['mc_dm_category:read', 'mc_dm_download:read']);

function documentFor(type: string, objectId: number, downloadId: number): [DocumentNode, Record<string, unknown>] {
  if (type.startsWith('comment.')) return [ops.GetCommentDocument, { commentId: objectId, full: false }];
  if (type.startsWith('file.')) return [ops.GetFileDocument, { fileId: objectId, full: false }];
  if (type.startsWith('review.')) return [ops.GetReviewDocument, { reviewId: objectId, full: false }];
  if (type === 'version.released') return [GET_VERSION, { id: toGlobalId('Version', objectId) }];
  return [ops.GetDownloadDocument, { downloadId, full: false }];
}

/** The owner as a visitor with read scopes, or null when the owner is gone (a deleted user, a revoked key). */
async function ownerVisitor(services: Services, owner: WebhookOwner): Promise<Visitor | null> {
  if (owner.userId === 0) {
    if (owner.apiKeyId === null) return null;
    const key = await services.prisma.apiKey.findUnique({ where: { id: owner.apiKeyId } });
    if (!key?.isActive || key.type !== 'super' || (key.expiresAt && key.expiresAt.getTime() <= Date.now())) return null;
    const guest = services.groups.guest;
    return {
      userId: 0,
      username: 'Guest',
      isSuper: true,
      isAdmin: false,
      isModerator: false,
      groupIds: [guest],
      scopes: READ_SCOPES,
      apiKeyId: key.id,
    };
  }
  const user = await services.prisma.user.findUnique({ where: { id: owner.userId }, include: { memberships: true } });
  if (!user) return null;
  return {
    userId: user.id,
    username: user.username,
    isSuper: false,
    isAdmin: user.isAdmin,
    isModerator: user.isModerator,
    groupIds: [user.primaryGroupId, ...user.memberships.map((m) => m.groupId)],
    scopes: READ_SCOPES,
    apiKeyId: 0,
  };
}

export function webhookRenderer(schema: GraphQLSchema, services: Services): Render {
  const enums = new Map<DocumentNode, EnumTree>();
  const enumsOf = (document: DocumentNode) => {
    let tree = enums.get(document);
    if (!tree) {
      const operation = document.definitions.find(
        (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
      )!;
      tree = enumTree(schema, document, operation);
      enums.set(document, tree);
    }
    return tree;
  };
  return async (owner, type, objectId, downloadId) => {
    const visitor = await ownerVisitor(services, owner);
    if (!visitor) return null;
    const [document, variableValues] = documentFor(type, objectId, downloadId);
    // Without the view counter: a delivery is not a visitor reading the download.
    const contextValue = createContext({ ...services, views: undefined }, visitor);
    const result = await execute({ schema, document, variableValues, contextValue });
    const value = result.data ? Object.values(lowerEnums(result.data, enumsOf(document)) as object)[0] : null;
    if (value === null || value === undefined || (result.errors && result.errors.length > 0)) {
      // A hard-deleted download is gone for everyone: its event still says which one, to owners who may see anything.
      if (type === 'download.deleted' && (visitor.isSuper || visitor.isAdmin)) return { download_id: downloadId };
      return null;
    }
    return snakeKeys(value);
  };
}
