// Text PostgreSQL cannot store (U+0000) or that is not text at all (a lone UTF-16 surrogate, which has no UTF-8
// form) is refused at the edge with 400 invalid_input naming the field, on both faces: the REST inputs layer calls
// badText() on every text field, and this plugin walks a GraphQL operation's variables and string literals.
import { visit, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { invalidInput } from '../errors.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a text cannot be stored, or null. */
export function badText(s: string): string | null {
  if (s.includes('\u0000')) return 'contains the character U+0000, which cannot be stored';
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate, which is not a character';
  return null;
}

/** The first bad string in a JSON-like value, with its path (`input.title`, `tags[2]`). */
function findInValue(value: unknown, path: string, depth = 0): { path: string; why: string } | null {
  if (typeof value === 'string') {
    const why = badText(value);
    return why ? { path, why } : null;
  }
  if (depth > 64 || value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findInValue(value[i], `${path}[${i}]`, depth + 1);
      if (hit) return hit;
    }
    return null;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return null; // an Upload
  for (const [k, v] of Object.entries(value)) {
    const bad = badText(k);
    if (bad) return { path: path ? `${path}.${k}` : k, why: bad };
    const hit = findInValue(v, path ? `${path}.${k}` : k, depth + 1);
    if (hit) return hit;
  }
  return null;
}

/** The first string literal in a document that cannot be stored, named by its argument or input field. */
function findInDocument(doc: DocumentNode): { path: string; why: string } | null {
  let found: { path: string; why: string } | null = null;
  const names: string[] = [];
  visit(doc, {
    Argument: {
      enter(node) {
        names.push(node.name.value);
      },
      leave() {
        names.pop();
      },
    },
    ObjectField: {
      enter(node) {
        names.push(node.name.value);
      },
      leave() {
        names.pop();
      },
    },
    StringValue(node) {
      if (found) return;
      const why = badText(node.value);
      if (why) found = { path: names.join('.') || 'query', why };
    },
  });
  return found;
}

// A document's literals never change, and Yoga hands the same parsed document to every request that sends the same
// text: each document is walked once.
const documents = new WeakMap<DocumentNode, { path: string; why: string } | null>();
function inDocument(doc: DocumentNode) {
  let hit = documents.get(doc);
  if (hit === undefined) {
    hit = findInDocument(doc);
    documents.set(doc, hit);
  }
  return hit;
}

/** The first text an operation's variables or literals hold that no field takes (U+0000, a lone surrogate), or null. */
export function badTextIn(
  variables: Record<string, unknown> | null | undefined,
  document: DocumentNode,
): { path: string; why: string } | null {
  return findInValue(variables ?? {}, '') ?? inDocument(document);
}

export function textInputPlugin(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const hit = badTextIn(args.variableValues, args.document);
      if (hit) setResultAndStopExecution({ errors: [invalidInput(hit.path, `${hit.path} ${hit.why}.`)] });
    },
  };
}
