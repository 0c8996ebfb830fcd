// The admin CLI on the configured database (DATABASE_URL, or the embedded database under DATA_DIR), acting as the
// operator: a super-user visitor with every scope, through the same domain functions as the GraphQL admin API.
// On PostgreSQL it works while the service runs, and announces revocations and group changes to the running
// instances' caches; the embedded database belongs to one process, so there the service must be stopped.
import path from 'node:path';
import type { Config } from '../config.js';
import type { PrismaClient, ApiKey, User } from '../generated/prisma/client.js';
import { StartError } from '../errors.js';
import { openDatabase, targetOf, type Database } from '../db/client.js';
import { migrate } from '../db/migrate.js';
import { ensureBuiltInGroups } from '../modules/accounts/index.js';
import { CHANNEL, type CacheChange } from '../db/changes.js';
import * as admin from '../modules/accounts/index.js';
import * as reads from '../modules/accounts/index.js';
import { Access, type Visitor } from '../permissions/access.js';
import { SCOPES } from '../permissions/names.js';
import { CliError, unixOf, type KeyRow, type Operator, type UserRow } from './operator.js';

const OPERATOR: Visitor = {
  userId: 0,
  username: 'operator (admin CLI)',
  isSuper: true,
  isAdmin: true,
  isModerator: true,
  groupIds: [],
  scopes: new Set(SCOPES),
  apiKeyId: 0,
};

export async function openDirect(config: Config): Promise<Operator> {
  let db: Database;
  try {
    db = await openDatabase(targetOf(config));
  } catch (err) {
    if (err instanceof StartError && !config.databaseUrl && /in use by process/.test(err.message)) {
      throw new CliError(
        `The service is running on this DATA_DIR (${config.dataDir}): stop it, or use the GraphQL admin API with a key (--url <server> --key <key>).`,
      );
    }
    if (err instanceof StartError) throw new CliError(err.message);
    throw new CliError(`Could not open the database: ${(err as Error).message.split('\n')[0]}`);
  }
  try {
    await migrate(db);
    await ensureBuiltInGroups(db);
  } catch (err) {
    await db.close().catch(() => {});
    throw new CliError(`Could not prepare the database: ${(err as Error).message.split('\n')[0]}`);
  }
  return new DirectOperator(db, config);
}

class DirectOperator implements Operator {
  readonly where: string;
  private readonly prisma: PrismaClient;
  private readonly access = new Access(OPERATOR, null);

  constructor(
    private readonly db: Database,
    config: Config,
  ) {
    this.prisma = db.prisma;
    this.where =
      db.kind === 'postgres'
        ? 'the PostgreSQL database (DATABASE_URL)'
        : `the embedded database in ${path.join(config.dataDir, 'db')}`;
  }

  /** Tells the running instances (PostgreSQL) to forget a cached key or user at once rather than in CACHE_SECONDS. */
  private async announce(change: CacheChange): Promise<void> {
    if (this.db.kind !== 'postgres') return;
    await this.db
      .query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ origin: 'admin-cli', ...change })])
      .catch(() => {});
  }

  private async userRows(users: User[]): Promise<UserRow[]> {
    const [groups, memberships] = await Promise.all([
      this.prisma.group.findMany({ select: { id: true, name: true } }),
      this.prisma.groupMembership.findMany({
        where: { userId: { in: users.map((u) => u.id) } },
        orderBy: { groupId: 'asc' },
      }),
    ]);
    const names = new Map(groups.map((g) => [g.id, g.name]));
    return users.map((u) => ({
      id: u.id,
      username: u.username,
      isAdmin: u.isAdmin,
      isModerator: u.isModerator,
      groups: [
        u.primaryGroupId,
        ...memberships.filter((m) => m.userId === u.id && m.groupId !== u.primaryGroupId).map((m) => m.groupId),
      ].map((g) => names.get(g) ?? `#${g}`),
    }));
  }

  private keyRow(k: ApiKey): KeyRow {
    return {
      id: k.id,
      type: k.type,
      userId: k.userId,
      title: k.title,
      scopes: k.scopes,
      isActive: k.isActive,
      createdAt: unixOf(k.createdAt)!,
      lastUsedAt: unixOf(k.lastUsedAt),
    };
  }

  async listUsers(opts: { search?: string; page?: number }) {
    const { nodes, pagination } = await reads.listUsers(this.prisma, {
      search: opts.search,
      page: opts.page,
      perPage: 100,
    });
    return {
      rows: await this.userRows(nodes),
      page: pagination.page,
      lastPage: pagination.lastPage,
      total: pagination.total,
    };
  }

  async findUser(ref: string) {
    const user = /^\d+$/.test(ref)
      ? await this.prisma.user.findUnique({ where: { id: Number(ref) } })
      : await this.prisma.user.findUnique({ where: { username: ref } });
    if (!user) throw new CliError(`No user ${/^\d+$/.test(ref) ? `with id ${ref}` : `named "${ref}"`} exists.`);
    return (await this.userRows([user]))[0]!;
  }

  async createUser(input: { username: string; isAdmin: boolean; isModerator: boolean; groups: string[] }) {
    const user = await admin.createUser(this.prisma, this.access, input);
    return (await this.userRows([user]))[0]!;
  }

  async setGroups(userId: number, groups: string[]) {
    const user = await admin.setUserGroups(this.prisma, this.access, userId, groups);
    await this.announce({ kind: 'user', userId });
    return (await this.userRows([user]))[0]!;
  }

  async listKeys(opts: { userId?: number; active?: boolean; page?: number }) {
    const { nodes, pagination } = await reads.listApiKeys(this.prisma, this.access, { ...opts, perPage: 100 });
    return {
      rows: nodes.map((k) => this.keyRow(k)),
      page: pagination.page,
      lastPage: pagination.lastPage,
      total: pagination.total,
    };
  }

  async createKey(input: { type: 'guest' | 'user' | 'super'; userId?: number; scopes: string[]; title?: string }) {
    const { key, apiKey } = await admin.createApiKey(this.prisma, this.access, input);
    return { key, apiKey: this.keyRow(apiKey) };
  }

  async revokeKey(id: number) {
    const key = await admin.revokeApiKey(this.prisma, this.access, id);
    await this.announce({ kind: 'key', hash: key.keyHash });
    return this.keyRow(key);
  }

  recover(title: string) {
    return this.createKey({ type: 'super', scopes: ['all'], title });
  }

  explain(userId: number, categoryId?: number) {
    return reads.effectivePermissions(this.prisma, userId, categoryId);
  }

  async listPrefixes() {
    return (await reads.listPrefixes(this.prisma)).map((p) => ({
      id: p.id,
      title: p.title,
      categoryIds: p.categories.map((c) => c.categoryId),
    }));
  }

  async createPrefix(title: string) {
    const p = await admin.createPrefix(this.prisma, title);
    return { id: p.id, title: p.title, categoryIds: [] };
  }

  async assignPrefix(prefixId: number, categoryId: number) {
    await admin.assignPrefix(this.prisma, prefixId, categoryId);
    const p = (await this.listPrefixes()).find((x) => x.id === prefixId)!;
    return p;
  }

  close() {
    return this.db.close();
  }
}
