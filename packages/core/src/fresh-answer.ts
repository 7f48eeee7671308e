// An answer from another connection that gates a write to a pinned one (postgres.js must never
// write to a connection that closed, porsager/postgres#1208): "the backend lives" is only as fresh
// as the moment the server gave it. When the answer took long to arrive (the process was frozen or
// starved, and read it together with the pinned connection's close), it may be stale: asked again,
// the next answer comes after every event that was waiting with it has been read.

/** A round trip longer than this makes an answer suspect, and it is asked again. */
export const STALE_ANSWER_MS = 100;
/** A slow answer is asked once more, and that one is taken as it is (a busy machine is slow throughout). */
const MAX_ASKS = 2;

/**
 * `ask()`'s answer, asked once more when its round trip took longer than {@link STALE_ANSWER_MS}.
 * For the checks before a release writes (rare, and not bound as tightly as a heartbeat).
 *
 * @example
 * ```ts
 * import { freshAnswer } from './fresh-answer.ts';
 *
 * const rows = await freshAnswer(() => port.query(db, backendAliveStatement(pid)));
 * ```
 */
export async function freshAnswer<T>(ask: () => Promise<T>, staleAfterMs = STALE_ANSWER_MS): Promise<T> {
  for (let round = 1; ; round++) {
    const asked = performance.now();
    const answer = await ask();
    if (round >= MAX_ASKS || performance.now() - asked <= staleAfterMs) return answer;
  }
}
