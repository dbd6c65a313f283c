import type { CoordinationStore } from "../coordination/store.js";
import type { Clock } from "../engine/clock.js";

/** How long a cluster's active, as read from its ownership lease, is named in `S` replies before it is read again. */
export const ACTIVE_FRESH_MS = 1_000;

/**
 * Which node is the active of each other cluster, by its ownership lease in the store (the holder is
 * `<address> <incarnation>`), so that an `S` reply sends the client straight to it rather than to a
 * node that may redirect once more. Read on demand: a node that redirects nothing reads nothing, and
 * one that redirects a lot reads each cluster at most once per `ACTIVE_FRESH_MS`. A failed or slow
 * read only leaves the hint as it was: the client then follows the other cluster's `M` redirects.
 */
export class ClusterActives {
  readonly #store: CoordinationStore;
  readonly #clock: Clock;
  readonly #known = new Map<string, { address: string | undefined; readAt: number }>();
  readonly #reading = new Set<string>();

  constructor(store: CoordinationStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** The active of `cluster` as last read (undefined if unknown); starts a read if that is stale. */
  activeOf(cluster: string): string | undefined {
    const known = this.#known.get(cluster);
    const now = this.#clock.now();
    if ((known === undefined || now - known.readAt >= ACTIVE_FRESH_MS) && !this.#reading.has(cluster)) {
      this.#reading.add(cluster);
      this.#store.readLease(cluster).then(
        (lease) => {
          this.#reading.delete(cluster);
          const address = lease?.holder.split(" ")[0];
          this.#known.set(cluster, { address, readAt: this.#clock.now() });
        },
        () => {
          this.#reading.delete(cluster);
          // Not refreshed: ask again on the next redirect after the usual interval.
          this.#known.set(cluster, { address: known?.address, readAt: this.#clock.now() });
        },
      );
    }
    return known?.address;
  }
}
