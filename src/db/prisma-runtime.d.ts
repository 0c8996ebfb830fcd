// The one module of Prisma's runtime that src/db/prisma-plans.ts reaches into (it ships without types).
declare module '@prisma/client/runtime/query_compiler_bg.postgresql.mjs' {
  export class QueryCompiler {
    compile(query: string): unknown;
  }
}
