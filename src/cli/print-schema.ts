// Writes the schema's SDL. `npm run generate` writes rest-adapter/generated/schema.graphql, the input of
// `codegen.ts`; `npm run schema` writes schema.graphql at the repository root, the committed copy that clients read
// and that test/schema-file.test.ts holds equal to the code (and free of unannounced breaking changes).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { schema } from '../modules/index.js';
import { schemaSdl } from '../graphql/sdl.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const out = path.resolve(root, process.argv[2] ?? 'rest-adapter/generated/schema.graphql');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, schemaSdl(schema));
console.log(`schema written to ${path.relative(process.cwd(), out)}`);
