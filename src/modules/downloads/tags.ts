// Tag strings: trimmed, lower-cased, inner whitespace collapsed, duplicates and empties dropped.
import { LIMITS } from '../../config.js';
import type { Database } from '../../db/database.js';
import { sqlRows, type Sql } from '../../db/sql.js';
import { invalidInput } from '../../errors.js';

export const MAX_TAGS = LIMITS.maxTags;
export const MAX_TAG_LENGTH = LIMITS.maxTagLength;

export function normalizeTags(raw: readonly string[]): string[] {
  const tags = [...new Set(raw.map((t) => t.trim().toLowerCase().replace(/\s+/g, ' ')).filter(Boolean))];
  const long = tags.find((t) => t.length > MAX_TAG_LENGTH);
  if (long)
    throw invalidInput(
      'tags',
      `Each tag may be at most ${MAX_TAG_LENGTH} characters; "${long.slice(0, 20)}…" is longer.`,
    );
  if (tags.length > MAX_TAGS)
    throw invalidInput('tags', `A download may carry at most ${MAX_TAGS} tags, got ${tags.length}.`);
  return tags;
}

/** Replaces the download's tags with `tags` (already normalised). `tx`: a driver or Prisma transaction. */
export async function setTags(tx: Sql, downloadId: number, tags: string[]): Promise<void> {
  await sqlRows(tx, 'DELETE FROM download_tag WHERE "downloadId" = $1::int', [downloadId]);
  if (tags.length === 0) return;
  await sqlRows(tx, 'INSERT INTO tag (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING', [tags]);
  await sqlRows(
    tx,
    'INSERT INTO download_tag ("downloadId", "tagId") SELECT $1::int, id FROM tag WHERE name = ANY($2::text[])',
    [downloadId, tags],
  );
}

/** The download's tag names, sorted (as `normalizeTags` would give them). */
export async function tagsOf(db: Pick<Database, 'query'>, downloadId: number): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    'SELECT t.name FROM download_tag dt JOIN tag t ON t.id = dt."tagId" WHERE dt."downloadId" = $1::int',
    [downloadId],
  );
  return rows.map((r) => r.name).sort();
}
