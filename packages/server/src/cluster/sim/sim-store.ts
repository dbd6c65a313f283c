import { CoordinationState } from "../../coordination/memory-store.js";
import {
  type CoordinationStore,
  CoordinatorUnavailableError,
  type LeaseInfo,
  type LeaseOutcome,
  type OwnershipLease,
  type VersionedDocument,
} from "../../coordination/store.js";
import type { Rng } from "./rng.js";
import type { Scheduler } from "./scheduler.js";

/** The simulated cluster's name in the store (one cluster; several are named `a`, `b`, …). */
export const SIM_CLUSTER = "sim";
/** How long a node waits for a store call before it counts as failed (the backends' default is 2 s). */
const CALL_TIMEOUT_MS = 1_000;
/** How often a watch whose link is cut tries to resume (etcd's client re-creates it from its revision). */
const WATCH_RESUME_MS = 50;

/** What a store link needs of the node at its end. */
export interface StoreCaller {
  readonly name: string;
  readonly up: boolean;
  readonly incarnation: number;
  /** Runs `work` now, or once the node runs again if it is stalled (dropped if it was killed). */
  defer(work: () => void): void;
}

/**
 * The coordination store of a simulated deployment: one CoordinationState on the world's
 * clock, which every node reaches over its own link. A call reaches the store after the link's
 * latency and takes effect there (unless the link is cut: lost), and its answer comes back after
 * the latency (unless cut by then: lost); a call left without an answer fails after the call
 * timeout. A killed process's calls may still reach the store, as a real one's would.
 */
export class SimStore {
  readonly state: CoordinationState;
  readonly #scheduler: Scheduler;
  readonly #rng: Rng;
  /** Settling a call's promise runs node code in continuations: the world must let them run. */
  readonly #settled: () => void;
  readonly #cut = new Set<string>();
  /** Nodes whose calls reach the store (and take effect) but whose answers are lost. */
  readonly #answersLost = new Set<string>();
  #extraLatencyMs = 0;

  constructor(scheduler: Scheduler, rng: Rng, settled: () => void) {
    this.state = new CoordinationState(scheduler.clock);
    this.#scheduler = scheduler;
    this.#rng = rng;
    this.#settled = settled;
  }

  /** Cuts (or restores) the link between node `name` and the store, both ways. */
  cut(name: string, cut: boolean): void {
    if (cut) this.#cut.add(name);
    else this.#cut.delete(name);
  }

  /**
   * The store's answers to node `name` are lost (or no longer), while its calls still take effect:
   * a lease acquired or renewed without the node knowing it.
   */
  loseAnswers(name: string, lost: boolean): void {
    if (lost) this.#answersLost.add(name);
    else this.#answersLost.delete(name);
  }

  /** Every store call takes `ms` longer each way (a slow store, an overloaded etcd). */
  slow(ms: number): void {
    this.#extraLatencyMs = ms;
  }

  healAll(): void {
    this.#cut.clear();
    this.#answersLost.clear();
    this.#extraLatencyMs = 0;
  }

  /** The name under which `caller`'s current process holds leases. */
  holderName(caller: StoreCaller): string {
    return `${caller.name} ${caller.incarnation}`;
  }

  /** The store's view as seen by `caller` over its link. */
  clientFor(caller: StoreCaller): CoordinationStore {
    const call = <T>(operation: (state: CoordinationState) => T) => this.#call(caller, operation);
    return {
      description: "simulated store",
      takeEpoch: (atLeast: bigint, count?: number) => call((state) => state.takeEpoch(atLeast, count)),
      readEpoch: () => call((state) => state.readEpoch()),
      acquireLease: (cluster: string, holder: string, ttlMs: number): Promise<LeaseOutcome> =>
        call((state) => state.acquireLease(cluster, holder, ttlMs)),
      renewLease: (lease: OwnershipLease) => call((state) => state.renewLease(lease)),
      releaseLease: (lease: OwnershipLease) => call((state) => state.releaseLease(lease)),
      readLease: (cluster: string): Promise<LeaseInfo | undefined> =>
        call((state) => state.readLease(cluster)),
      readDocument: (name: string): Promise<VersionedDocument | undefined> =>
        call((state) => state.readDocument(name)),
      writeDocument: (name: string, value: string, expected: bigint) =>
        call((state) => state.writeDocument(name, value, expected)),
      watchDocument: (name, onChange) => this.#watch(caller, name, onChange),
      close: () => Promise.resolve(),
    };
  }

  #latency(): number {
    return this.#rng.int(1, 5) + this.#extraLatencyMs;
  }

  /**
   * A watch over `caller`'s link: each change reaches the node a latency after it was made, in
   * version order. While the link is cut (or loses answers) the stream waits and then resumes from
   * where it was, as etcd's watch does after a reconnection: no change is lost or reordered. A
   * watch ends with its process.
   */
  #watch(
    caller: StoreCaller,
    name: string,
    onChange: (document: VersionedDocument | undefined) => void,
  ): () => void {
    const incarnation = caller.incarnation;
    const live = () => !stopped && caller.up && caller.incarnation === incarnation;
    const queue: Array<{ readonly document: VersionedDocument | undefined; readonly readyAt: number }> = [];
    let stopped = false;
    let pumping = false;
    const blocked = () => this.#cut.has(caller.name) || this.#answersLost.has(caller.name);
    const pump = (): void => {
      pumping = false;
      if (!live() || queue.length === 0) return;
      if (blocked()) {
        pumping = true;
        this.#scheduler.after(WATCH_RESUME_MS, pump);
        return;
      }
      const { document } = queue.shift()!;
      caller.defer(() => {
        if (!live()) return;
        onChange(document);
        this.#settled();
      });
      next();
    };
    const next = () => {
      const head = queue[0];
      if (head === undefined || pumping) return;
      pumping = true;
      this.#scheduler.at(head.readyAt, pump);
    };
    const stop = this.state.watchDocument(name, (document) => {
      const last = queue.at(-1)?.readyAt ?? 0;
      queue.push({ document, readyAt: Math.max(this.#scheduler.now + this.#latency(), last) });
      next();
    });
    return () => {
      stopped = true;
      stop();
    };
  }

  #call<T>(caller: StoreCaller, operation: (state: CoordinationState) => T): Promise<T> {
    const incarnation = caller.incarnation;
    const current = () => caller.up && caller.incarnation === incarnation;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (run: () => void) =>
        caller.defer(() => {
          if (settled || !current()) return;
          settled = true;
          run();
          this.#settled();
        });
      this.#scheduler.after(CALL_TIMEOUT_MS, () =>
        settle(() => reject(new CoordinatorUnavailableError("the simulated store did not answer in time"))),
      );
      if (this.#cut.has(caller.name)) return;
      this.#scheduler.after(this.#latency(), () => {
        if (this.#cut.has(caller.name)) return;
        // The operation takes effect now; its answer travels back.
        const answer = operation(this.state);
        this.#scheduler.after(this.#latency(), () => {
          if (this.#cut.has(caller.name) || this.#answersLost.has(caller.name)) return;
          settle(() => resolve(answer));
        });
      });
    });
  }
}
