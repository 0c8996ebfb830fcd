// First-start data: the built-in groups with their default grants, and the bootstrap key (contract §1, §3).
// Runs under an advisory lock so instances starting together agree.
import type { Database, Session } from '../../db/client.js';
import type { BuiltInGroupIds } from '../../auth/visitor.js';
import { BUILT_IN_GROUPS, SCOPES } from '../../permissions/names.js';
import { generateKey, hashKey } from '../../auth/keys.js';

const LOCK_ID = 72_640_332; // "the bootstrapper"

export interface BootstrapResult {
  groups: BuiltInGroupIds;
  /** Set only when a key was generated on this start: it must be shown to the operator once. */
  generatedKey?: string;
}

async function ensureGroups(s: Session): Promise<BuiltInGroupIds> {
  const ids: Partial<BuiltInGroupIds> = {};
  for (const [name, grants] of Object.entries(BUILT_IN_GROUPS) as [keyof BuiltInGroupIds, readonly string[]][]) {
    const created = await s.query<{ id: number }>(
      `INSERT INTO "user_group" (name, title, "isBuiltIn") VALUES ($1, $2, true) ON CONFLICT (name) DO NOTHING RETURNING id`,
      [name, name[0]!.toUpperCase() + name.slice(1)],
    );
    if (created.length > 0) {
      // Default grants are written once, when the group is created; operators may change them afterwards.
      for (const perm of grants) {
        await s.query(`INSERT INTO "group_permission" ("groupId", permission) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
          created[0]!.id,
          perm,
        ]);
      }
      ids[name] = created[0]!.id;
    } else {
      ids[name] = (await s.query<{ id: number }>(`SELECT id FROM "user_group" WHERE name = $1`, [name]))[0]!.id;
    }
  }
  return ids as BuiltInGroupIds;
}

async function ensureKey(s: Session, bootstrapKey: string | undefined): Promise<string | undefined> {
  if (bootstrapKey) {
    await s.query(
      `INSERT INTO "api_key" ("keyHash", type, scopes, title, "isActive")
       VALUES ($1, 'super', $2, 'Bootstrap key (DM_BOOTSTRAP_KEY)', true)
       ON CONFLICT ("keyHash") DO UPDATE SET type = 'super', scopes = $2, "isActive" = true, "revokedAt" = NULL, "expiresAt" = NULL`,
      [hashKey(bootstrapKey), [...SCOPES]],
    );
    return undefined;
  }
  const [{ n }] = (await s.query<{ n: number }>(`SELECT count(*)::int AS n FROM "api_key"`)) as [{ n: number }];
  if (n > 0) return undefined;
  const key = generateKey();
  await s.query(`INSERT INTO "api_key" ("keyHash", type, scopes, title) VALUES ($1, 'super', $2, 'Bootstrap key')`, [
    hashKey(key),
    [...SCOPES],
  ]);
  return key;
}

export async function bootstrap(db: Database, bootstrapKey?: string): Promise<BootstrapResult> {
  return db.session(async (s) => {
    await s.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    try {
      const groups = await ensureGroups(s);
      const generatedKey = await ensureKey(s, bootstrapKey);
      return { groups, generatedKey };
    } finally {
      await s.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]);
    }
  });
}

/** The built-in groups only, without the bootstrap key: for tools (the admin CLI) that open the database themselves. */
export async function ensureBuiltInGroups(db: Database): Promise<BuiltInGroupIds> {
  return db.session(async (s) => {
    await s.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    try {
      return await ensureGroups(s);
    } finally {
      await s.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]);
    }
  });
}
