/**
 * One holder at a time per key, granted in arrival order. The memory store locks per resource (its
 * writes may await, and a stale writer must not slip in between check and advance); the Postgres
 * store locks one key to keep transactions on a single pg.Client from interleaving.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Waits for the key and returns the function that releases it (call it exactly once). */
  async lock(key: string): Promise<() => void> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => released);
    this.#tails.set(key, tail);
    await previous;
    return () => {
      release();
      // Forget idle keys so a long-lived store does not grow with every resource it ever saw.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }

  async run<T>(key: string, section: () => Promise<T>): Promise<T> {
    const unlock = await this.lock(key);
    try {
      return await section();
    } finally {
      unlock();
    }
  }
}
