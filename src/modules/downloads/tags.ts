// Tag strings: trimmed, lower-cased, inner whitespace collapsed, duplicates and empties dropped.
import { LIMITS } from '../../config.js';
import type { Prisma } from '../../generated/prisma/client.js';
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

/** Replaces the download's tags with `tags` (already normalised). */
export async function setTags(tx: Prisma.TransactionClient, downloadId: number, tags: string[]): Promise<void> {
  await tx.downloadTag.deleteMany({ where: { downloadId } });
  if (tags.length === 0) return;
  await tx.tag.createMany({ data: tags.map((name) => ({ name })), skipDuplicates: true });
  const rows = await tx.tag.findMany({ where: { name: { in: tags } }, select: { id: true } });
  await tx.downloadTag.createMany({ data: rows.map((r) => ({ downloadId, tagId: r.id })) });
}
