// Permission resolution over the category tree (contract §3), as pure data → answer.
//
// For one group and one category: an override on the category decides (allow/deny); without one the
// parent category is asked; a top-level category falls back to the group's global grant.
// A visitor holds a permission when any of their groups resolves to allow.
import type { Permission } from './names.js';

export type OverrideValue = 'allow' | 'deny';

/**
 * The rule that gives one group its answer for one permission: an override on a category (allow or deny), or, with
 * none on the way up, the group's global setting (allow when it holds the permission globally, unset when it does not).
 */
export interface Rule {
  groupId: number;
  level: 'global' | 'category';
  /** The category holding the override; null at the global level. */
  categoryId: number | null;
  value: 'allow' | 'deny' | 'unset';
}

/** Why a visitor holds a permission or not: every group's rule, and the one that decided. */
export interface Explanation {
  permission: Permission;
  granted: boolean;
  /**
   * Granted: the first group (in the visitor's group order) whose rule allows. Refused: the first deny override among
   * the groups if there is one, else the first group's (unset) global setting. Null for a visitor without groups.
   */
  decidedBy: Rule | null;
  /** One rule per group, in the visitor's group order. */
  rules: Rule[];
}

/**
 * The permission tables. Never changed once a resolver reads them (src/permissions/load.ts replaces the whole object
 * when the tables change): resolvers of the same data and groups share their answers across requests.
 */
export interface PermissionData {
  /** Global grants per group id. */
  grants: Map<number, Set<string>>;
  /** Overrides: category id → group id → permission → value. */
  overrides: Map<number, Map<number, Map<string, OverrideValue>>>;
  /** Category id → parent category id (null at the top). */
  parents: Map<number, number | null>;
}

/** The categories where a visitor holds view, and of those where they also hold viewModerated and viewDeleted. */
export interface ViewableCategories {
  readonly categoryIds: readonly number[];
  readonly moderatedIn: readonly number[];
  readonly deletedIn: readonly number[];
}

/** What the resolvers of one group set share over one PermissionData: its answers, worked out once. */
interface Shared {
  memo: Map<string, boolean>;
  viewable?: ViewableCategories;
}
const sharedByData = new WeakMap<PermissionData, Map<string, Shared>>();
/** Group sets remembered per PermissionData; past it a resolver keeps its answers to itself (one request). */
const MAX_SHARED_GROUP_SETS = 1000;
const childrenByData = new WeakMap<PermissionData, Map<number, number[]>>();

function sharedFor(data: PermissionData, groupIds: readonly number[]): Shared {
  let byGroups = sharedByData.get(data);
  if (!byGroups) {
    byGroups = new Map();
    sharedByData.set(data, byGroups);
  }
  const key = groupIds.join(',');
  let shared = byGroups.get(key);
  if (!shared) {
    shared = { memo: new Map() };
    if (byGroups.size < MAX_SHARED_GROUP_SETS) byGroups.set(key, shared);
  }
  return shared;
}

/** Category id → its children's ids, for the whole tree of `data` (built once per PermissionData). */
function childrenOf(data: PermissionData): Map<number, number[]> {
  let children = childrenByData.get(data);
  if (!children) {
    children = new Map();
    for (const [id, parent] of data.parents) {
      if (parent === null) continue;
      const list = children.get(parent);
      if (list) list.push(id);
      else children.set(parent, [id]);
    }
    childrenByData.set(data, children);
  }
  return children;
}

export class PermissionResolver {
  private readonly shared: Shared;
  private readonly memo: Map<string, boolean>;

  constructor(
    private readonly groupIds: readonly number[],
    private readonly data: PermissionData,
  ) {
    this.shared = sharedFor(data, groupIds);
    this.memo = this.shared.memo;
  }

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

  /** Every category id of the tree. */
  categoryIds(): number[] {
    return [...this.data.parents.keys()];
  }

  /** The categories where the visitor holds view, and of those where they also hold viewModerated, viewDeleted. */
  viewableCategories(): ViewableCategories {
    if (!this.shared.viewable) {
      const categoryIds = this.categoryIds().filter((id) => this.has('view', id));
      this.shared.viewable = {
        categoryIds,
        moderatedIn: categoryIds.filter((id) => this.has('viewModerated', id)),
        deletedIn: categoryIds.filter((id) => this.has('viewDeleted', id)),
      };
    }
    return this.shared.viewable;
  }

  /** `categoryId` and every category below it (none when it does not exist). */
  subtreeOf(categoryId: number): number[] {
    if (!this.data.parents.has(categoryId)) return [];
    const children = childrenOf(this.data);
    const out: number[] = [];
    const seen = new Set<number>();
    const stack = [categoryId];
    while (stack.length) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push(id);
      stack.push(...(children.get(id) ?? []));
    }
    return out;
  }

  /** The same answer as has(), with the rule each group followed and the one that decided. */
  explain(perm: Permission, categoryId?: number | null): Explanation {
    const rules = this.groupIds.map((g) => this.ruleOf(g, perm, categoryId ?? null));
    const granted = rules.some((r) => r.value === 'allow');
    const decidedBy = granted
      ? rules.find((r) => r.value === 'allow')!
      : (rules.find((r) => r.value === 'deny') ?? rules[0] ?? null);
    return { permission: perm, granted, decidedBy, rules };
  }

  private groupAllows(groupId: number, perm: Permission, categoryId: number | null): boolean {
    return this.ruleOf(groupId, perm, categoryId).value === 'allow';
  }

  private ruleOf(groupId: number, perm: Permission, categoryId: number | null): Rule {
    const seen = new Set<number>();
    let current = categoryId;
    while (current !== null && !seen.has(current)) {
      seen.add(current);
      const value = this.data.overrides.get(current)?.get(groupId)?.get(perm);
      if (value) return { groupId, level: 'category', categoryId: current, value };
      current = this.data.parents.get(current) ?? null;
    }
    const held = this.data.grants.get(groupId)?.has(perm) ?? false;
    return { groupId, level: 'global', categoryId: null, value: held ? 'allow' : 'unset' };
  }
}

export function emptyPermissionData(): PermissionData {
  return { grants: new Map(), overrides: new Map(), parents: new Map() };
}
