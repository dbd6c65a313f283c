/**
 * The test's view of its workers, all in this process: per tenant, the jobs the workers' loops have
 * taken from the queue and those that run (they hold a permit and logged their start). Its gate holds
 * the running jobs until every loop has taken a job and each tenant runs as many as its permits let
 * it, the moment the limit bites; then the jobs go through. Waits on events only: no timers.
 */
export interface TenantCounts {
  /** Taken from the queue by a loop and not yet settled: running or waiting for a permit. */
  taken: number;
  running: number;
}

export class TenantTracker {
  readonly #permits: number;
  readonly #loops: number;
  readonly #jobs: number;
  readonly #counts = new Map<string, TenantCounts>();
  #finished = 0;
  #openGate!: () => void;
  #settle!: (error?: unknown) => void;
  /** Resolves when the limit bit; running jobs wait for it. */
  readonly gate = new Promise<void>((resolve) => {
    this.#openGate = resolve;
  });
  /** Resolves when every job finished, rejects at the first failure or a tenant over its limit. */
  readonly done: Promise<void>;
  /** Every tenant's counts when the gate opened. */
  atGate: ReadonlyMap<string, TenantCounts> | undefined;

  constructor({ permits, loops, jobs }: { permits: number; loops: number; jobs: number }) {
    this.#permits = permits;
    this.#loops = loops;
    this.#jobs = jobs;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (error) => (error === undefined ? resolve() : reject(error));
    });
  }

  taken(tenant: string): void {
    this.#of(tenant).taken++;
    this.#maybeOpen();
  }

  left(tenant: string): void {
    this.#of(tenant).taken--;
  }

  started(tenant: string): void {
    const counts = this.#of(tenant);
    if (++counts.running > this.#permits) this.fail(new Error(`${counts.running} jobs of ${tenant} at once`));
    this.#maybeOpen();
  }

  finished(tenant: string): void {
    this.#of(tenant).running--;
    if (++this.#finished === this.#jobs) this.#settle();
  }

  fail(error: unknown): void {
    this.#settle(error);
    this.#openGate();
  }

  #of(tenant: string): TenantCounts {
    const counts = this.#counts.get(tenant) ?? { taken: 0, running: 0 };
    this.#counts.set(tenant, counts);
    return counts;
  }

  /** Opens the gate once every loop holds a job and no tenant could run one more under its limit. */
  #maybeOpen(): void {
    if (this.atGate) return;
    const counts = [...this.#counts.values()];
    if (counts.reduce((sum, { taken }) => sum + taken, 0) < this.#loops) return;
    if (counts.some(({ taken, running }) => running < Math.min(taken, this.#permits))) return;
    this.atGate = new Map([...this.#counts].map(([tenant, counts]) => [tenant, { ...counts }]));
    this.#openGate();
  }
}
