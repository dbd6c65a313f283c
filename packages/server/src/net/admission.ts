import type { ServerLimits } from "../limits.js";

/**
 * Decides whether a new connection gets a slot. Every connection counts against `maxConnections`;
 * when the server has an auth token, connections that have not authenticated yet also count
 * against `maxUnauthenticated`. When either is full, a new connection takes the slot of the oldest
 * unauthenticated one, which is evicted: slow or hostile connections that never authenticate can
 * then never keep out a client that does, since an honest client authenticates within one round
 * trip, and a flood would have to open `maxUnauthenticated` connections within that round trip to
 * push it out. Only when every slot is held by an authenticated connection is a newcomer refused.
 *
 * Not thread-safe, which JavaScript rules out; calls come from the server's socket events in order.
 */
export class Admission<C> {
  readonly #limits: Pick<ServerLimits, "maxConnections" | "maxUnauthenticated">;
  readonly #openCount: () => number;
  readonly #evict: (connection: C) => void;
  /** In arrival order, so the first is the oldest. */
  readonly #unauthenticated = new Set<C>();

  /**
   * `openCount`: connections open now, including evicted ones still closing (they are gone within
   * the close linger). `evict`: closes a connection whose slot was taken.
   */
  constructor(
    limits: Pick<ServerLimits, "maxConnections" | "maxUnauthenticated">,
    openCount: () => number,
    evict: (connection: C) => void,
  ) {
    this.#limits = limits;
    this.#openCount = openCount;
    this.#evict = evict;
  }

  /** Connections that have not authenticated yet (and have not been evicted). */
  get unauthenticatedCount(): number {
    return this.#unauthenticated.size;
  }

  /**
   * Whether a new connection may be served; `mustAuthenticate` when the server has an auth token.
   * May evict the oldest unauthenticated connection to make room. False: refuse the newcomer.
   */
  admit(mustAuthenticate: boolean): boolean {
    const full = this.#openCount() >= this.#limits.maxConnections;
    if (mustAuthenticate && (full || this.#unauthenticated.size >= this.#limits.maxUnauthenticated)) {
      const oldest = this.#unauthenticated.values().next();
      if (!oldest.done) {
        this.#unauthenticated.delete(oldest.value);
        this.#evict(oldest.value);
        return true;
      }
    }
    return !full;
  }

  /** An admitted connection that must still authenticate. */
  awaitingAuthentication(connection: C): void {
    this.#unauthenticated.add(connection);
  }

  /** The connection authenticated, or closed: it no longer holds an unauthenticated slot. */
  settled(connection: C): void {
    this.#unauthenticated.delete(connection);
  }
}
