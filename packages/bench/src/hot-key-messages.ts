/** Messages from the hot-key parent to a worker. */
export type ToWorker =
  | {
      readonly type: 'open';
      readonly design: number;
      readonly url: string;
      readonly worker: number;
      /** Concurrent loops in this process, on a pool of as many connections (1: one caller). */
      readonly loops: number;
    }
  | {
      readonly type: 'go';
      readonly startAt: number;
      readonly until: number;
      readonly key: string;
      readonly row: number;
    }
  | { readonly type: 'close' }
  | { readonly type: 'exit' };

/** Messages from a worker: `cycles` are `[loop, arrival, acquired, released]` in µs on the shared clock. */
export type ToParent =
  | { readonly type: 'started' | 'closed' }
  /** `pid`: the backend the worker's lock waits on, when it has exactly one. */
  | { readonly type: 'ready'; readonly pid: number | undefined }
  | {
      readonly type: 'done';
      readonly cycles: readonly (readonly [number, number, number, number])[];
      readonly errors: number;
      readonly firstError: string | undefined;
      /** This worker's CPU µs (user + system) over its measured window. */
      readonly cpuUs: number;
    }
  | { readonly type: 'failed'; readonly error: string };
