/** Prints a measured recovery time (the figures docs/reliability.md quotes) beside the test output. */
export function measured(what: string, ms: number): number {
  console.log(`[measured] ${what}: ${Math.round(ms)} ms`);
  return ms;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The time from now until `promise` settles, with its outcome. */
export async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = performance.now();
  try {
    const value = await promise;
    return { ms: performance.now() - start, value };
  } catch (error) {
    return { ms: performance.now() - start, error };
  }
}
