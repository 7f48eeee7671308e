import { inject } from 'vitest';
import { type DevDatabase, devDatabase } from '../src/dev-database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Provided by the repository's root test setup: one PostgreSQL for every project of the run. */
    databaseUrl: string;
  }
}

/**
 * The database the example's tests run against: the repository's shared test database when the root
 * setup provides one, else DATABASE_URL or an embedded server (a copy of the folder run on its own).
 */
export async function testDatabase(): Promise<DevDatabase> {
  const provided = inject('databaseUrl');
  if (provided) return { url: provided, source: 'DATABASE_URL', stop: async () => undefined };
  return devDatabase();
}
