import { describe, expect, it } from 'vitest';
import { Child, processTestTimeout } from '../child.ts';
import { pidOf, type SuiteContext } from '../context.ts';

/** A holder that dies without releasing. */
export function faultsSuite(ctx: SuiteContext): void {
  const noProcesses = ctx.noProcesses;

  describe.skipIf(noProcesses)(
    `holder killed${noProcesses ? ` (skipped: ${noProcesses})` : ''}`,
    { timeout: processTestTimeout },
    () => {
      it('a holder process killed with SIGKILL releases its lock and the waiter gets it promptly', async () => {
        const { name, key } = ctx.name('sigkill');
        const holder = new Child(ctx.harness, ctx.url, 'hold', { key: name });
        const { pid: holderPid } = await holder.next('held');
        const waiter = await ctx.open();
        let killedAt = 0;
        const acquired = waiter.withLock(name, async (sql) => ({
          pid: await pidOf(sql),
          at: performance.now(),
        }));
        await ctx.backdoor.waitForWaiters(key, 1);
        killedAt = performance.now();
        holder.kill('SIGKILL');
        const got = await acquired;
        expect(got.pid).not.toBe(holderPid);
        // PostgreSQL notices the dead socket at once on loopback; allow generously for a busy machine.
        expect(got.at - killedAt).toBeLessThan(5_000);
        expect(await holder.exited).toBe(null);
      });
    },
  );
}
