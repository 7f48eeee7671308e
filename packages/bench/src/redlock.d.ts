// redlock 5.0.0-beta.2 ships types that its own `exports` map hides from NodeNext resolution
// (mike-marcacci/node-redlock#168); this declares the slice the benchmark calls.
declare module 'redlock' {
  import type { Redis } from 'ioredis';

  export interface Lock {
    release(): Promise<unknown>;
  }

  export default class Redlock {
    constructor(clients: readonly Redis[], settings?: { readonly retryCount?: number });
    acquire(resources: readonly string[], duration: number): Promise<Lock>;
  }
}
