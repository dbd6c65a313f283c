import type { LockClient } from "@lock/client";

export interface ClientLoadOptions {
  /** Keys the loops share: each key has `workers / keys` loops contending for it. */
  readonly keys: readonly string[];
  /** Acquire → release loops running at once. */
  readonly workers: number;
}

/**
 * Acquire → release loops through one real @lock/client, for tests that change a cluster under load
 * (rolling upgrades, membership changes). A failed operation is any error or a release resolving
 * false; every grant's token is kept per key, in grant order (a key's next grant comes only after its
 * holder released, which it does after its token was recorded), so `unorderedTokens` can check that
 * tokens only ever increased.
 */
export class ClientLoad {
  readonly failures: string[] = [];
  readonly #tokens = new Map<string, bigint[]>();
  readonly #client: LockClient;
  readonly #loops: Promise<void>[];
  #completed = 0;
  #stopping = false;
  #waiters: Array<{ target: number; resolve(): void }> = [];

  constructor(client: LockClient, options: ClientLoadOptions) {
    this.#client = client;
    this.#loops = Array.from({ length: options.workers }, (_, worker) =>
      this.#loop(options.keys[worker % options.keys.length]!),
    );
  }

  /** Acquire → release cycles completed so far. */
  get completed(): number {
    return this.#completed;
  }

  /** Every token granted, per key, in grant order. */
  get tokens(): ReadonlyMap<string, readonly bigint[]> {
    return this.#tokens;
  }

  /** Resolves once `cycles` more cycles completed (the load makes progress); rejects after `timeoutMs`. */
  progress(cycles: number, timeoutMs = 30_000): Promise<void> {
    const target = this.#completed + cycles;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((waiter) => waiter.resolve !== done);
        reject(
          new Error(
            `no ${cycles} completed cycles within ${timeoutMs} ms (${this.failures.length} failures)`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#waiters.push({ target, resolve: done });
    });
  }

  /** Lets every loop finish its cycle, then stops them. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
  }

  /** Keys whose tokens did not strictly increase, each with the first pair out of order. */
  unorderedTokens(): string[] {
    const unordered: string[] = [];
    for (const [key, tokens] of this.#tokens) {
      const at = tokens.findIndex((token, i) => i > 0 && token <= tokens[i - 1]!);
      if (at > 0) unordered.push(`${key}: ${tokens[at - 1]} then ${tokens[at]}`);
    }
    return unordered;
  }

  async #loop(key: string): Promise<void> {
    const tokens = this.#tokens.get(key) ?? [];
    this.#tokens.set(key, tokens);
    while (!this.#stopping) {
      try {
        const lock = await this.#client.acquire(key, { leaseMs: 10_000, waitMs: 10_000 });
        tokens.push(lock.token);
        if (!(await lock.release()))
          this.failures.push(`release of ${key} (token ${lock.token}) resolved false`);
        this.#cycleDone();
      } catch (error) {
        this.failures.push(`${key}: ${String(error)}`);
        // The test has failed already: a loop that cannot reach the cluster need not spin.
        if (this.failures.length >= 100) return;
      }
    }
  }

  #cycleDone(): void {
    this.#completed += 1;
    const reached = this.#waiters.filter((waiter) => waiter.target <= this.#completed);
    if (reached.length === 0) return;
    this.#waiters = this.#waiters.filter((waiter) => waiter.target > this.#completed);
    for (const waiter of reached) waiter.resolve();
  }
}
