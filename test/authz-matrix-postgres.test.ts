// The authorization matrix (test/authz/matrix.ts) on the PostgreSQL server; reported as skipped without
// TEST_DATABASE_URL. A file of its own so that it runs beside the embedded database's (test/authz-matrix.test.ts).
import { describe } from 'vitest';
import { matrixTests } from './authz/matrix.js';

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server', () => matrixTests('postgres'));
