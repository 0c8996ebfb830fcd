// The house's import rules (.dependency-cruiser.cjs), run by `npm run lint` in CI: this proves they hold on the code
// and that they catch what they are for, by planting each kind of wrong import in a copy of the tree.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cruise } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const root = path.resolve(import.meta.dirname, '..');
const ruleSet = require(path.join(root, '.dependency-cruiser.cjs'));

async function violations(baseDir: string): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(baseDir);
  try {
    const { tsConfig: _, ...options } = ruleSet.options;
    const result = await cruise(['src', 'rest-adapter'], {
      ...options,
      validate: true,
      ruleSet: { forbidden: ruleSet.forbidden },
    });
    const output = result.output as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
    return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  } finally {
    process.chdir(cwd);
  }
}

describe('import rules', () => {
  it('hold on the code as it is', async () => {
    expect(await violations(root)).toEqual([]);
  }, 60_000);

  describe('catch each kind of wrong import planted in a copy of the tree', () => {
    let tree: string;
    beforeAll(() => {
      tree = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-layers-'));
      for (const dir of ['src', 'rest-adapter']) {
        fs.cpSync(path.join(root, dir), path.join(tree, dir), {
          recursive: true,
          filter: (p) => !p.includes(`${path.sep}generated`) || p.endsWith(`${path.sep}generated`),
        });
      }
      // The copy resolves packages and generated code from the project.
      fs.symlinkSync(path.join(root, 'node_modules'), path.join(tree, 'node_modules'));
      fs.cpSync(path.join(root, 'src', 'generated'), path.join(tree, 'src', 'generated'), { recursive: true });
      fs.cpSync(path.join(root, 'rest-adapter', 'generated'), path.join(tree, 'rest-adapter', 'generated'), {
        recursive: true,
      });
    });
    afterAll(() => fs.rmSync(tree, { recursive: true, force: true }));

    const plant = (file: string, line: string) => {
      const target = path.join(tree, file);
      const before = fs.readFileSync(target, 'utf8');
      fs.writeFileSync(target, `${line}\n${before}`);
      return () => fs.writeFileSync(target, before);
    };

    it('a lower layer importing a higher one (db → http)', async () => {
      const undo = plant('src/db/lists.ts', "import '../http/server.js';");
      try {
        expect(await violations(tree)).toContain('no-upward-from-db: src/db/lists.ts → src/http/server.ts');
      } finally {
        undo();
      }
    }, 60_000);

    it('an import circle', async () => {
      const undo = plant('src/db/database.ts', "import './client.js';");
      try {
        const found = await violations(tree);
        expect(
          found.filter((v) => v.startsWith('no-circular: src/db/')),
          found.join('\n'),
        ).not.toEqual([]);
      } finally {
        undo();
      }
    }, 60_000);

    it("a module reaching into another module's files instead of its index.ts", async () => {
      const undo = plant('src/modules/comments/rules.ts', "import '../downloads/rules.js';");
      try {
        expect(await violations(tree)).toContain(
          'modules-through-index: src/modules/comments/rules.ts → src/modules/downloads/rules.ts',
        );
      } finally {
        undo();
      }
    }, 60_000);
  });
});
