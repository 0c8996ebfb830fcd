// What the admin CLI can do, as one interface with two ways of doing it: straight on the configured database
// (this file), or through a running server's GraphQL admin API with a key (remote.ts). Both end in the same domain
// functions, so the rules are the service's own.
import type { ApiKeyType } from '../generated/prisma/client.js';
import type { PermissionExplanation } from '../modules/accounts/index.js';

export interface UserRow {
  id: number;
  username: string;
  isAdmin: boolean;
  isModerator: boolean;
  groups: string[];
}
export interface KeyRow {
  id: number;
  type: ApiKeyType;
  userId: number | null;
  title: string;
  scopes: string[];
  isActive: boolean;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds; null if never used. */
  lastUsedAt: number | null;
}
export interface PrefixRow {
  id: number;
  title: string;
  categoryIds: number[];
}
export interface ListPage<T> {
  rows: T[];
  page: number;
  lastPage: number;
  total: number;
}
export interface Explained {
  user: { id: number; username: string; isAdmin: boolean; isModerator: boolean };
  category: { id: number; title: string } | null;
  permissions: PermissionExplanation[];
}
export interface NewKey {
  key: string;
  apiKey: KeyRow;
}

export interface Operator {
  /** Where the CLI acts, for messages: "the embedded database at …", "https://…". */
  readonly where: string;
  listUsers(opts: { search?: string; page?: number }): Promise<ListPage<UserRow>>;
  /** A user by id, or by exact username. */
  findUser(ref: string): Promise<UserRow>;
  createUser(input: { username: string; isAdmin: boolean; isModerator: boolean; groups: string[] }): Promise<UserRow>;
  setGroups(userId: number, groups: string[]): Promise<UserRow>;
  listKeys(opts: { userId?: number; active?: boolean; page?: number }): Promise<ListPage<KeyRow>>;
  createKey(input: { type: ApiKeyType; userId?: number; scopes: string[]; title?: string }): Promise<NewKey>;
  revokeKey(id: number): Promise<KeyRow>;
  /** A fresh SUPER key with every scope: the way back in for an operator who lost every key. */
  recover(title: string): Promise<NewKey>;
  explain(userId: number, categoryId?: number): Promise<Explained>;
  listPrefixes(): Promise<PrefixRow[]>;
  createPrefix(title: string): Promise<PrefixRow>;
  assignPrefix(prefixId: number, categoryId: number): Promise<PrefixRow>;
  close(): Promise<void>;
}

/** A refusal or failure the CLI reports in one line and exits 1 for. */
export class CliError extends Error {}

export const unixOf = (d: Date | null): number | null => (d ? Math.floor(d.getTime() / 1000) : null);
