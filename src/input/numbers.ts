// Whole numbers the API accepts: every integer is a PostgreSQL `integer`, so at most 2^31 - 1. Identifiers that must
// name a row start at 1; counts, sort keys and "0 means none" fields start at 0. Messages name the real range.

export const MAX_INT = 2 ** 31 - 1;

/** "a whole number from 1 to 2147483647" */
export function wholeNumberRange(min: number, max = MAX_INT): string {
  return `a whole number from ${min} to ${max}`;
}

export function isWholeNumberIn(v: unknown, min: number, max = MAX_INT): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * The smallest whole number an input takes, on both faces: 1 for a required identifier (`…_id` / `…Id`, non-null: it
 * must name a row), else 0 (counts, page sizes, sort keys, and optional ids where 0 means "none", such as
 * parent_category_id and prefix_id; a user id, where 0 names the guest). No input takes a negative number.
 */
export function smallestWholeNumber(name: string, required: boolean): number {
  if (name === 'userId' || name === 'user_id') return 0; // user 0 is the guest, a user like any other here
  return required && (name.endsWith('_id') || name.endsWith('Id')) ? 1 : 0;
}
