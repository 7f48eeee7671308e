// The Drizzle schema the snippets import as `./schema.ts`: the tables they query.
import { integer, pgTable } from 'drizzle-orm/pg-core';

export const accounts = pgTable('accounts', {
  id: integer('id').primaryKey(),
  balance: integer('balance').notNull(),
});
