import type { ServerLimits } from "../limits.js";

/**
 * Decides whether a new connection gets a slot. Every connection counts against `maxConnections`
 * from its TCP accept on; connections that have not proved themselves yet (over TLS, still in the
 * handshake; with an auth token, not yet authenticated) also count against `maxUnauthenticated`.
 * When either is full, a new connection takes the slot of the oldest unproved one, which is
 * evicted: slow or hostile connections that never finish a handshake or authenticate can then never
 * keep out a client that does, since an honest client gets through within a round trip or two, and
 * a flood would have to open `maxUnauthenticated` connections within that time to push it out.
 * Only when every slot is held by a proved connection is a newcomer refused.
 *
 * An eviction that makes room under `maxConnections` must free the slot at once (`immediately`):
 * the evicted socket is destroyed rather than left to linger, so a flood can never hold more
 * descriptors than `maxConnections` and a few.
 *
 * Not thread-safe, which JavaScript rules out; calls come from the server's socket events in order.
 */
export class Admission<C> {
  readonly #limits: Pick<ServerLimits, "maxConnections" | "maxUnauthenticated">;
  readonly #openCount: () => number;
  readonly #evict: (connection: C, immediately: boolean) => void;
  /** In arrival order, so the first is the oldest. */
  readonly #unauthenticated = new Set<C>();

  /**
   * `openCount`: connections open now, including evicted ones still closing (they are gone within
   * the close linger). `evict`: closes a connection whose slot was taken; `immediately`: destroy
   * its socket now (its slot is needed), else it may linger to deliver its error line.
   */
  constructor(
    limits: Pick<ServerLimits, "maxConnections" | "maxUnauthenticated">,
    openCount: () => number,
    evict: (connection: C, immediately: boolean) => void,
  ) {
    this.#limits = limits;
    this.#openCount = openCount;
    this.#evict = evict;
  }

  /** Connections that have not proved themselves yet (and have not been evicted). */
  get unauthenticatedCount(): number {
    return this.#unauthenticated.size;
  }

  /**
   * Whether a new connection may be served; `unproved` when it must still finish a TLS handshake
   * or authenticate. May evict the oldest unproved connection to make room. False: refuse it.
   */
  admit(unproved: boolean): boolean {
    const full = this.#openCount() >= this.#limits.maxConnections;
    if (unproved && (full || this.#unauthenticated.size >= this.#limits.maxUnauthenticated)) {
      const oldest = this.#unauthenticated.values().next();
      if (!oldest.done) {
        this.#unauthenticated.delete(oldest.value);
        this.#evict(oldest.value, full);
        return true;
      }
    }
    return !full;
  }

  /** An admitted connection that must still finish its TLS handshake or authenticate. */
  awaitingAuthentication(connection: C): void {
    this.#unauthenticated.add(connection);
  }

  /** The connection proved itself, or closed: it no longer holds an unproved slot. */
  settled(connection: C): void {
    this.#unauthenticated.delete(connection);
  }
}
