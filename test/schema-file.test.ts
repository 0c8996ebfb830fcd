// The committed schema.graphql is what clients read and what the code serves; and a change to it breaks no client
// unannounced: compared with its previous version in git, a change graphql-inspector calls breaking fails, except
// the removal of a field or enum value that was deprecated first.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSchema } from 'graphql';
import { CriticalityLevel, diff, type Change } from '@graphql-inspector/core';
import { schema } from '../src/modules/index.js';
import { schemaSdl } from '../src/graphql/sdl.js';

const root = path.resolve(import.meta.dirname, '..');
const committedPath = path.join(root, 'schema.graphql');

function git(...args: string[]): string | null {
  try {
    return execFileSync('git', args, {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 << 20,
    });
  } catch {
    return null;
  }
}

/**
 * The version to compare with: the committed one when the working file differs from it (a change being made),
 * else the version before the last commit that changed the file (the change just committed).
 */
function previousSchema(current: string): { sdl: string; from: string } | null {
  const atHead = git('show', 'HEAD:schema.graphql');
  if (atHead !== null && atHead !== current) return { sdl: atHead, from: 'HEAD' };
  const commits = (git('log', '--format=%H', '-n', '2', 'HEAD', '--', 'schema.graphql') ?? '')
    .split('\n')
    .filter(Boolean);
  if (commits.length < 2) return null;
  const sdl = git('show', `${commits[1]}:schema.graphql`);
  return sdl === null ? null : { sdl, from: commits[1]!.slice(0, 12) };
}

/** Removing what was deprecated first is the announced way to break. */
const announced = (c: Change) =>
  (c.type === 'FIELD_REMOVED' &&
    (c.meta as { isRemovedFieldDeprecated?: boolean }).isRemovedFieldDeprecated === true) ||
  (c.type === 'ENUM_VALUE_REMOVED' && (c.meta as { isEnumValueDeprecated?: boolean }).isEnumValueDeprecated === true);

describe('schema.graphql', () => {
  const committed = fs.readFileSync(committedPath, 'utf8');

  it('equals the schema the code builds (run `npm run schema` after changing the schema)', () => {
    expect(committed).toBe(schemaSdl(schema));
  });

  const previous = previousSchema(committed);
  it.skipIf(previous === null)(
    `has no unannounced breaking change against its previous version${previous ? ` (${previous.from})` : ' (none in git history)'}`,
    async () => {
      const changes = await diff(buildSchema(previous!.sdl), buildSchema(committed));
      const breaking = changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking && !announced(c));
      expect(breaking.map((c) => c.message)).toEqual([]);
    },
  );

  it('the breaking-change rule catches removals and accepts deprecated-first removals', async () => {
    const before = buildSchema(`type Query { a: Int, b: Int @deprecated(reason: "use a"), c: String! }`);
    const after = buildSchema(`type Query { a: Int, d: Int, c: String }`);
    const changes = await diff(before, after);
    const breaking = changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking && !announced(c));
    expect(breaking.map((c) => c.path).sort()).toEqual(['Query.c']);
    expect(changes.some((c) => c.path === 'Query.d' && c.criticality.level === CriticalityLevel.NonBreaking)).toBe(
      true,
    );
  });
});
