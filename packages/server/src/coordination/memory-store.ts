import type { Clock } from "../engine/clock.js";
import type {
  CoordinationStore,
  LeaseInfo,
  LeaseOutcome,
  OwnershipLease,
  VersionedDocument,
} from "./store.js";

interface StoredLease {
  readonly holder: string;
  readonly handle: string;
  expiresAt: number;
}

/**
 * A coordination store in one process's memory, on a clock: the simulator's (one store shared by
 * every simulated node, with faults put between a node and it) and unit tests'. Every operation
 * takes effect at once, in call order; the promise only carries the answer.
 */
export class MemoryCoordinationStore implements CoordinationStore {
  readonly description = "memory";
  readonly #clock: Clock;
  #epoch = 0n;
  #nextHandle = 1;
  readonly #leases = new Map<string, StoredLease>();
  readonly #documents = new Map<string, VersionedDocument>();
  readonly #watchers = new Map<string, Set<(document: VersionedDocument | undefined) => void>>();
  /** Calls handled, by operation: the simulator checks the store stays off the data path. */
  readonly calls = { takeEpoch: 0, acquireLease: 0, renewLease: 0, releaseLease: 0 };

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  takeEpoch(atLeast: bigint): Promise<bigint> {
    this.calls.takeEpoch += 1;
    this.#epoch = (this.#epoch > atLeast ? this.#epoch : atLeast) + 1n;
    return Promise.resolve(this.#epoch);
  }

  readEpoch(): Promise<bigint> {
    return Promise.resolve(this.#epoch);
  }

  acquireLease(cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome> {
    this.calls.acquireLease += 1;
    const current = this.#live(cluster);
    if (current && current.holder !== holder) return Promise.resolve({ held: false, holder: current.holder });
    const handle = String(this.#nextHandle++);
    this.#leases.set(cluster, { holder, handle, expiresAt: this.#clock.now() + ttlMs });
    return Promise.resolve({ held: true, lease: { cluster, holder, ttlMs, handle } });
  }

  renewLease(lease: OwnershipLease): Promise<LeaseOutcome> {
    this.calls.renewLease += 1;
    const current = this.#live(lease.cluster);
    if (current?.handle !== lease.handle) return Promise.resolve({ held: false, holder: current?.holder });
    current.expiresAt = this.#clock.now() + lease.ttlMs;
    return Promise.resolve({ held: true, lease });
  }

  releaseLease(lease: OwnershipLease): Promise<void> {
    this.calls.releaseLease += 1;
    if (this.#leases.get(lease.cluster)?.handle === lease.handle) this.#leases.delete(lease.cluster);
    return Promise.resolve();
  }

  readLease(cluster: string): Promise<LeaseInfo | undefined> {
    const current = this.#live(cluster);
    if (!current) return Promise.resolve(undefined);
    return Promise.resolve({ holder: current.holder, remainingMs: current.expiresAt - this.#clock.now() });
  }

  readDocument(name: string): Promise<VersionedDocument | undefined> {
    return Promise.resolve(this.#documents.get(name));
  }

  writeDocument(name: string, value: string, expectedVersion: bigint): Promise<bigint | undefined> {
    const version = this.#documents.get(name)?.version ?? 0n;
    if (version !== expectedVersion) return Promise.resolve(undefined);
    const written = { value, version: version + 1n };
    this.#documents.set(name, written);
    for (const watcher of this.#watchers.get(name) ?? []) watcher(written);
    return Promise.resolve(written.version);
  }

  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    const watchers = this.#watchers.get(name) ?? new Set();
    this.#watchers.set(name, watchers);
    watchers.add(onChange);
    onChange(this.#documents.get(name));
    return () => watchers.delete(onChange);
  }

  close(): Promise<void> {
    this.#watchers.clear();
    return Promise.resolve();
  }

  /** The lease of `cluster` if it has not expired by the store's clock (an expired one is dropped). */
  #live(cluster: string): StoredLease | undefined {
    const lease = this.#leases.get(cluster);
    if (lease && lease.expiresAt <= this.#clock.now()) {
      this.#leases.delete(cluster);
      return undefined;
    }
    return lease;
  }
}
