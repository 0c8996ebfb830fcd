// Permission resolution over the category tree (contract §3), as pure data → answer.
//
// For one group and one category: an override on the category decides (allow/deny); without one the
// parent category is asked; a top-level category falls back to the group's global grant.
// A visitor holds a permission when any of their groups resolves to allow.
import type { Permission } from './names.js';

export type OverrideValue = 'allow' | 'deny';

export interface PermissionData {
  /** Global grants per group id. */
  grants: Map<number, Set<string>>;
  /** Overrides: category id → group id → permission → value. */
  overrides: Map<number, Map<number, Map<string, OverrideValue>>>;
  /** Category id → parent category id (null at the top). */
  parents: Map<number, number | null>;
}

export class PermissionResolver {
  private readonly memo = new Map<string, boolean>();

  constructor(private readonly groupIds: readonly number[], private readonly data: PermissionData) {}

  /** Whether the visitor holds `perm` globally, or in `categoryId` when given. */
  has(perm: Permission, categoryId?: number | null): boolean {
    const key = `${perm}@${categoryId ?? ''}`;
    let answer = this.memo.get(key);
    if (answer === undefined) {
      answer = this.groupIds.some((g) => this.groupAllows(g, perm, categoryId ?? null));
      this.memo.set(key, answer);
    }
    return answer;
  }

  private groupAllows(groupId: number, perm: Permission, categoryId: number | null): boolean {
    const seen = new Set<number>();
    let current = categoryId;
    while (current !== null && !seen.has(current)) {
      seen.add(current);
      const value = this.data.overrides.get(current)?.get(groupId)?.get(perm);
      if (value) return value === 'allow';
      current = this.data.parents.get(current) ?? null;
    }
    return this.data.grants.get(groupId)?.has(perm) ?? false;
  }
}

export function emptyPermissionData(): PermissionData {
  return { grants: new Map(), overrides: new Map(), parents: new Map() };
}
