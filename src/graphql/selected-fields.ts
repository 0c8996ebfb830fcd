// The field names an operation selects on the objects under a path of the current field (e.g. `nodes` of a list),
// so a read can fetch only the columns those fields need. Fragments and inline fragments are followed whatever their
// type condition (a superset is always safe), and @include/@skip are honoured with the request's variables: the REST
// documents switch their `with=full` fields on and off that way.
import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  getDirectiveValues,
  type FieldNode,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from 'graphql';

type Info = Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments' | 'variableValues'>;

function included(node: Parameters<typeof getDirectiveValues>[1], variables: Info['variableValues']): boolean {
  if (!node.directives?.length) return true;
  if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
}

/** The fields of `set` (through fragments), or null when a fragment it spreads is unknown. */
function fieldsOf(set: SelectionSetNode, info: Info, out: FieldNode[], seen: Set<string>): boolean {
  for (const s of set.selections) {
    if (!included(s, info.variableValues)) continue;
    if (s.kind === 'Field') out.push(s);
    else if (s.kind === 'InlineFragment') {
      if (!fieldsOf(s.selectionSet, info, out, seen)) return false;
    } else {
      const name = s.name.value;
      if (seen.has(name)) continue;
      seen.add(name);
      const fragment = info.fragments[name];
      if (!fragment || !fieldsOf(fragment.selectionSet, info, out, seen)) return false;
    }
  }
  return true;
}

/**
 * The names of the fields selected under `path` (response field names, not aliases) of the current field, or null
 * when the selection cannot be followed (then the caller reads everything).
 */
export function selectedFields(info: Info, path: readonly string[]): Set<string> | null {
  let level: FieldNode[] = [...info.fieldNodes];
  for (const step of path) {
    const next: FieldNode[] = [];
    for (const f of level) {
      if (!f.selectionSet) continue;
      const children: FieldNode[] = [];
      if (!fieldsOf(f.selectionSet, info, children, new Set())) return null;
      next.push(...children.filter((c) => c.name.value === step));
    }
    level = next;
  }
  const names = new Set<string>();
  for (const f of level) {
    if (!f.selectionSet) continue;
    const children: FieldNode[] = [];
    if (!fieldsOf(f.selectionSet, info, children, new Set())) return null;
    for (const c of children) names.add(c.name.value);
  }
  return names;
}
