import type { AdapterName } from '../options.ts';
import type { OpenAdapter } from './demo-adapter.ts';

/**
 * Loads one adapter's module. Dynamic imports keep each instance process to its own ORM (the pg
 * instance never loads Prisma's generated client).
 */
export async function loadAdapter(name: AdapterName): Promise<OpenAdapter> {
  switch (name) {
    case 'pg':
      return (await import('./pg.ts')).open;
    case 'prisma':
      return (await import('./prisma.ts')).open;
    case 'drizzle':
      return (await import('./drizzle.ts')).open;
    case 'kysely':
      return (await import('./kysely.ts')).open;
  }
}
