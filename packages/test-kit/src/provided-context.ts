// What the global setup hands every test project through `provide` / `inject`.
declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the PostgreSQL every test talks to. */
    databaseUrl: string;
    /** `external` (DATABASE_URL) or `embedded` (started for this run). */
    databaseKind: 'external' | 'embedded';
    /** PgBouncer URLs in front of the database, or the reason there is none (not installed). */
    pgbouncer: { transactionUrl: string; sessionUrl: string } | { missing: string };
  }
}

export {};
