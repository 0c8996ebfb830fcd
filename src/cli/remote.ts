// The admin CLI through a running server's GraphQL admin API (--url, --key): for when the embedded database is held
// by the running service, or the database is out of reach. The key's own rights apply, as for any client.
import {
  CliError,
  type Explained,
  type KeyRow,
  type ListPage,
  type Operator,
  type PrefixRow,
  type UserRow,
} from './operator.js';

// Lists inside objects are bounded (first: default 20, at most 100): a user's groups are few (the default), a
// prefix's categories may be many (100, on pages of 50 prefixes, within the cost limit).
const USER = 'userId username isAdmin isModerator groups';
const KEY = 'apiKeyId type userId title scopes isActive createdAt lastUsedAt';
const PREFIX = 'prefixId title categoryIds(first: 100)';
const RULE = 'groupId groupName level categoryId value';

// biome-ignore lint/suspicious/noExplicitAny: GraphQL response data from the server, read field by field as the queries above ask
type Json = any;

const userRow = (u: Json): UserRow => ({
  id: u.userId,
  username: u.username,
  isAdmin: u.isAdmin,
  isModerator: u.isModerator,
  groups: u.groups ?? [],
});
const keyRow = (k: Json): KeyRow => ({
  id: k.apiKeyId,
  type: k.type.toLowerCase(),
  userId: k.userId,
  title: k.title,
  scopes: k.scopes,
  isActive: k.isActive,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
});
const prefixRow = (p: Json): PrefixRow => ({ id: p.prefixId, title: p.title, categoryIds: p.categoryIds });
const rule = (r: Json) => r && { ...r, level: r.level.toLowerCase(), value: r.value.toLowerCase() };
const page = <T>(list: Json, map: (x: Json) => T): ListPage<T> => ({
  rows: list.nodes.map(map),
  page: list.pagination.page,
  lastPage: list.pagination.lastPage,
  total: list.pagination.total,
});

export function openRemote(url: string, key: string): Operator {
  let endpoint: URL;
  try {
    endpoint = new URL('/graphql', url);
  } catch {
    throw new CliError(`--url must be the server's address, such as http://127.0.0.1:3000, got "${url}".`);
  }

  async function gql(query: string, variables: Record<string, unknown> = {}): Promise<Json> {
    let res: Response;
    try {
      res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'forum-api-key': key },
        body: JSON.stringify({ query, variables }),
      });
    } catch (err) {
      throw new CliError(
        `Could not reach ${endpoint.origin}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
      );
    }
    let body: { data?: Json; errors?: { message: string; extensions?: { code?: string } }[] };
    try {
      body = (await res.json()) as typeof body;
    } catch {
      throw new CliError(
        `${endpoint} answered ${res.status} without a GraphQL response: is --url the service's address?`,
      );
    }
    const error = body.errors?.[0];
    if (error) throw new CliError(`${error.message}${error.extensions?.code ? ` (${error.extensions.code})` : ''}`);
    return body.data;
  }

  return {
    where: endpoint.origin,
    async listUsers({ search, page: p }) {
      const d = await gql(
        `query($s: String, $p: Int) { users(search: $s, page: $p, perPage: 100) { nodes { ${USER} } pagination { page lastPage total } } }`,
        { s: search, p },
      );
      return page(d.users, userRow);
    },
    async findUser(ref) {
      if (/^\d+$/.test(ref)) {
        const d = await gql(
          `query($id: ID!) { node(id: $id) { ... on User { ${USER} } } }`,
          { id: Buffer.from(`User:${Number(ref)}`).toString('base64url') } /* the schema's global id */,
        ).catch((err: Error) => {
          throw /user_not_found/.test(err.message) ? new CliError(`No user with id ${ref} exists.`) : err;
        });
        if (!d.node) throw new CliError(`No user with id ${ref} exists.`);
        return userRow(d.node);
      }
      for (let p = 1; ; p++) {
        const d = await gql(
          `query($s: String, $p: Int) { users(search: $s, page: $p, perPage: 100) { nodes { ${USER} } pagination { lastPage } } }`,
          { s: ref, p },
        );
        const found = d.users.nodes.find((u: Json) => u.username === ref);
        if (found) return userRow(found);
        if (p >= d.users.pagination.lastPage) throw new CliError(`No user named "${ref}" exists.`);
      }
    },
    async createUser(input) {
      const d = await gql(`mutation($i: CreateUserInput!) { createUser(input: $i) { user { ${USER} } } }`, {
        i: input,
      });
      return userRow(d.createUser.user);
    },
    async setGroups(userId, groups) {
      const d = await gql(`mutation($i: SetUserGroupsInput!) { setUserGroups(input: $i) { user { ${USER} } } }`, {
        i: { userId, groups },
      });
      return userRow(d.setUserGroups.user);
    },
    async listKeys({ userId, active, page: p }) {
      const d = await gql(
        `query($u: Int, $a: Boolean, $p: Int) { apiKeys(userId: $u, active: $a, page: $p, perPage: 100) { nodes { ${KEY} } pagination { page lastPage total } } }`,
        { u: userId, a: active, p },
      );
      return page(d.apiKeys, keyRow);
    },
    async createKey(input) {
      const d = await gql(`mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { ${KEY} } } }`, {
        i: { ...input, type: input.type.toUpperCase() },
      });
      return { key: d.createApiKey.key, apiKey: keyRow(d.createApiKey.apiKey) };
    },
    async revokeKey(id) {
      const d = await gql(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { ${KEY} } } }`, {
        id,
      });
      return keyRow(d.revokeApiKey.apiKey);
    },
    async recover() {
      throw new CliError(
        'keys recover works on the database itself, for when no key is left: run it without --url and --key (stop the service first on the embedded database). With a super-user key, use keys create --type super --scopes all.',
      );
    },
    async explain(userId, categoryId): Promise<Explained> {
      const d = await gql(
        `query($u: Int!, $c: Int) { effectivePermissions(userId: $u, categoryId: $c) { permission granted decidedBy { ${RULE} } rules(first: 100) { ${RULE} } } }`,
        { u: userId, c: categoryId },
      );
      const user =
        userId === 0
          ? { id: 0, username: 'Guest', isAdmin: false, isModerator: false }
          : await this.findUser(String(userId));
      return {
        user: { id: user.id, username: user.username, isAdmin: user.isAdmin, isModerator: user.isModerator },
        category:
          categoryId === undefined
            ? null
            : {
                id: categoryId,
                title:
                  (
                    await gql(`query($c: Int!) { category(categoryId: $c) { title } }`, { c: categoryId }).catch(
                      () => null,
                    )
                  )?.category?.title ?? `#${categoryId}`,
              },
        permissions: d.effectivePermissions.map((p: Json) => ({
          ...p,
          decidedBy: rule(p.decidedBy),
          rules: p.rules.map(rule),
        })),
      };
    },
    async listPrefixes() {
      const rows: PrefixRow[] = [];
      for (let p = 1; ; p++) {
        const page = (await gql(`query($p: Int) { prefixes(page: $p, perPage: 50) { ${PREFIX} } }`, { p }))
          .prefixes as Json[];
        rows.push(...page.map(prefixRow));
        if (page.length < 50) return rows;
      }
    },
    async createPrefix(title) {
      return prefixRow(
        (
          await gql(`mutation($t: String!) { createPrefix(input: { title: $t }) { prefix { ${PREFIX} } } }`, {
            t: title,
          })
        ).createPrefix.prefix,
      );
    },
    async assignPrefix(prefixId, categoryId) {
      const d = await gql(
        `mutation($p: Int!, $c: Int!) { assignPrefix(input: { prefixId: $p, categoryId: $c }) { prefix { ${PREFIX} } } }`,
        { p: prefixId, c: categoryId },
      );
      return prefixRow(d.assignPrefix.prefix);
    },
    async close() {},
  };
}
