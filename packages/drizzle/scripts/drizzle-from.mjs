// For scripts/test-drizzle.sh: `drizzle-orm` and its subpaths resolve as if imported from
// PGLOCK_DRIZZLE_ROOT (the release under test), in this process and in every child it starts.
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const from = pathToFileURL(`${process.env.PGLOCK_DRIZZLE_ROOT}/`).href;
const hooks = `export async function resolve(specifier, context, next) {
  const drizzle = specifier === 'drizzle-orm' || specifier.startsWith('drizzle-orm/');
  return next(specifier, drizzle ? { ...context, parentURL: ${JSON.stringify(from)} } : context);
}`;
if (process.env.PGLOCK_DRIZZLE_ROOT) register(`data:text/javascript,${encodeURIComponent(hooks)}`);
