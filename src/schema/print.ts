// Writes the schema's SDL to rest-adapter/generated/schema.graphql, the input of `codegen.ts`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { schema } from './index.js';

const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../rest-adapter/generated/schema.graphql');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, printSchema(schema) + '\n');
console.log(`schema written to ${path.relative(process.cwd(), out)}`);
