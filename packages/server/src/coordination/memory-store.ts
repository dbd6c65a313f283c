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
 * What a coordination store holds, in one process's memory, on a clock, with synchronous
 * operations: MemoryCoordinationStore serves it through the store contract, and the simulator
 * through links it can cut and slow (sim/sim-store.ts). Each operation has the contract's meaning.
 */
export class CoordinationState {
  readonly #clock: Clock;
  #epoch = 0n;
  #nextHandle = 1;
  readonly #leases = new Map<string, StoredLease>();
  readonly #documents = new Map<string, VersionedDocument>();
  readonly #watchers = new Map<string, Set<(document: VersionedDocument | undefined) => void>>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  takeEpoch(atLeast: bigint, count = 1): bigint {
    if (!Number.isSafeInteger(count) || count < 1)
      throw new RangeError(`takeEpoch takes 1 or more epochs, not ${count}`);
    this.#epoch = (this.#epoch > atLeast ? this.#epoch : atLeast) + BigInt(count);
    return this.#epoch;
  }

  readEpoch(): bigint {
    return this.#epoch;
  }

  acquireLease(cluster: string, holder: string, ttlMs: number): LeaseOutcome {
    const current = this.#live(cluster);
    if (current && current.holder !== holder) return { held: false, holder: current.holder };
    if (current) {
      current.expiresAt = Math.max(current.expiresAt, this.#clock.now() + ttlMs);
      return { held: true, lease: { cluster, holder, ttlMs, handle: current.handle } };
    }
    const handle = String(this.#nextHandle++);
    this.#leases.set(cluster, { holder, handle, expiresAt: this.#clock.now() + ttlMs });
    return { held: true, lease: { cluster, holder, ttlMs, handle } };
  }

  renewLease(lease: OwnershipLease): LeaseOutcome {
    const current = this.#live(lease.cluster);
    if (current?.handle !== lease.handle) return { held: false, holder: current?.holder };
    current.expiresAt = this.#clock.now() + lease.ttlMs;
    return { held: true, lease };
  }

  releaseLease(lease: OwnershipLease): void {
    if (this.#leases.get(lease.cluster)?.handle === lease.handle) this.#leases.delete(lease.cluster);
  }

  readLease(cluster: string): LeaseInfo | undefined {
    const current = this.#live(cluster);
    return current && { holder: current.holder, remainingMs: current.expiresAt - this.#clock.now() };
  }

  /** Who holds `cluster`'s lease at this instant by the store's clock (the simulator's checker). */
  holderNow(cluster: string): string | undefined {
    return this.#live(cluster)?.holder;
  }

  readDocument(name: string): VersionedDocument | undefined {
    return this.#documents.get(name);
  }

  writeDocument(name: string, value: string, expectedVersion: bigint): bigint | undefined {
    const version = this.#documents.get(name)?.version ?? 0n;
    if (version !== expectedVersion) return undefined;
    const written = { value, version: version + 1n };
    this.#documents.set(name, written);
    for (const watcher of this.#watchers.get(name) ?? []) watcher(written);
    return written.version;
  }

  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    const watchers = this.#watchers.get(name) ?? new Set();
    this.#watchers.set(name, watchers);
    watchers.add(onChange);
    onChange(this.#documents.get(name));
    return () => watchers.delete(onChange);
  }

  unwatchAll(): void {
    this.#watchers.clear();
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

/**
 * A coordination store in one process's memory (unit tests, and the contract suite's reference):
 * every operation takes effect at once, in call order; the promise only carries the answer.
 */
export class MemoryCoordinationStore implements CoordinationStore {
  readonly description = "memory";
  readonly state: CoordinationState;
  /** Calls handled, by operation: tests check the store stays off the data path. */
  readonly calls = { takeEpoch: 0, acquireLease: 0, renewLease: 0, releaseLease: 0 };

  constructor(clock: Clock) {
    this.state = new CoordinationState(clock);
  }

  takeEpoch(atLeast: bigint, count = 1): Promise<bigint> {
    this.calls.takeEpoch += 1;
    return Promise.resolve(this.state.takeEpoch(atLeast, count));
  }

  readEpoch(): Promise<bigint> {
    return Promise.resolve(this.state.readEpoch());
  }

  acquireLease(cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome> {
    this.calls.acquireLease += 1;
    return Promise.resolve(this.state.acquireLease(cluster, holder, ttlMs));
  }

  renewLease(lease: OwnershipLease): Promise<LeaseOutcome> {
    this.calls.renewLease += 1;
    return Promise.resolve(this.state.renewLease(lease));
  }

  releaseLease(lease: OwnershipLease): Promise<void> {
    this.calls.releaseLease += 1;
    this.state.releaseLease(lease);
    return Promise.resolve();
  }

  readLease(cluster: string): Promise<LeaseInfo | undefined> {
    return Promise.resolve(this.state.readLease(cluster));
  }

  readDocument(name: string): Promise<VersionedDocument | undefined> {
    return Promise.resolve(this.state.readDocument(name));
  }

  writeDocument(name: string, value: string, expectedVersion: bigint): Promise<bigint | undefined> {
    return Promise.resolve(this.state.writeDocument(name, value, expectedVersion));
  }

  watchDocument(name: string, onChange: (document: VersionedDocument | undefined) => void): () => void {
    return this.state.watchDocument(name, onChange);
  }

  close(): Promise<void> {
    this.state.unwatchAll();
    return Promise.resolve();
  }
}
