import type { SubjectName } from './subjects.ts';

/**
 * What a chaos worker's calls failed with that makes its client's close wait, by the upstream bug
 * behind it, so a close that never settles is reported by that bug's name. Both bugs happen with or
 * without pglock (reproduced with the ORM alone); pglock keeps no connection after its call returns
 * (the kit's "pglock sends nothing more and keeps no connection" test):
 *
 * - postgres.js keeps a statement that was in flight when its connection closed as in flight: the
 *   caller gets `CONNECTION_CLOSED`, and `end()` waits for that statement forever (with a timeout, the
 *   whole timeout) (porsager/postgres#1097);
 * - Drizzle's node-postgres `transaction()` sends BEGIN before the `try/finally` that releases its
 *   pooled client: a failed BEGIN leaves the client checked out, and `pool.end()` waits for it
 *   (drizzle-team/drizzle-orm#6241).
 *
 * @example
 * ```ts
 * const evidence = new TeardownEvidence('drizzle-node-postgres');
 * evidence.note(error); // every error a call rejected with
 * process.stderr.write(`close() stuck (${evidence.explain()})\n`);
 * ```
 */
export class TeardownEvidence {
  readonly #subject: SubjectName;
  #connectionClosed = 0;
  #beginFailed = 0;

  constructor(subject: SubjectName) {
    this.#subject = subject;
  }

  /** Looks at an error a call rejected with, and at its causes. */
  note(error: unknown): void {
    let current: unknown = error;
    for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
      const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
      if (code === 'CONNECTION_CLOSED') {
        this.#connectionClosed++;
        return;
      }
      if (typeof message === 'string' && /^Failed query: begin\b/.test(message)) {
        this.#beginFailed++;
        return;
      }
      current = cause;
    }
  }

  /** The upstream bug the failures seen point to, or that none does. */
  explain(): string {
    const postgresJs = this.#subject.endsWith('postgres-js');
    if (postgresJs && this.#connectionClosed > 0) {
      return `porsager/postgres#1097: ${this.#connectionClosed} call(s) failed with CONNECTION_CLOSED, a statement in flight when its connection closed, which postgres.js's end() waits for`;
    }
    if (this.#subject === 'drizzle-node-postgres' && this.#beginFailed > 0) {
      return `drizzle-team/drizzle-orm#6241: Drizzle's BEGIN failed ${this.#beginFailed} time(s), each leaving its pg client checked out (BEGIN runs before the try/finally that releases it), which pool.end() waits for`;
    }
    return 'no failure seen that points to a known upstream bug';
  }
}

/** The upstream issue a teardown finding names (`owner/repo#n`), if it names one. */
export function upstreamIssueOf(finding: string): string | undefined {
  return /\b(porsager\/postgres|drizzle-team\/drizzle-orm)#\d+/.exec(finding)?.[0];
}
