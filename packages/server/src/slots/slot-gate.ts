import {
  KEY_SLOTS,
  keySlot,
  type Request,
  type SlotMap,
  type SlotRange,
  type SlotRedirectReply,
} from "@lock/protocol";

/** The keyed verbs: every one of them is for the cluster that serves its key's slot. */
/** A keyed request, or a bundle as the gate reads it: by its first key (its keys share one slot). */
type KeyedRequest =
  | Extract<Request, { key: string }>
  | { readonly op: "B"; readonly key: string; readonly id: string };

/** What the gate says of a keyed request: undefined (serve it here), a redirect, or a refusal. */
export type SlotVerdict =
  | { readonly kind: "redirect"; readonly reply: SlotRedirectReply }
  | { readonly kind: "refuse"; readonly code: "NO_ACTIVE" | "SLOT_MOVING"; readonly message: string }
  | undefined;

/** A range of this cluster's being moved to another (`movingTo` set). */
export type OutgoingRange = SlotRange & { readonly movingTo: string };

/**
 * Which keys this cluster serves, by the slot map it last read from the coordination store
 * (docs/protocol.md, "Key slots"). Without a map it serves every key, as a lone cluster always has.
 * With one, a keyed request for a slot of another cluster is answered `S`, naming that cluster
 * and where to find it; the request changes nothing here.
 *
 * Moves (docs/consistency.md, "Moving slots"): a range being moved still belongs to its source until
 * the move commits, so the target redirects to the source meanwhile, and the source refuses
 * acquires and extensions there (`SLOT_MOVING`) while its holders drain; releases still run. Once
 * the move commits, the target grants in the range only after it took an epoch from the store's
 * counter *after* it read the commit: above every epoch the source ever granted from, so each key's
 * tokens keep rising across the move. Until then (`needsEpoch`) it refuses with `SLOT_MOVING` too.
 */
export class SlotGate {
  readonly cluster: string;
  #map: SlotMap | undefined;
  /** No map read yet: no keyed request runs meanwhile. */
  #awaiting: boolean;
  /** The re-read after taking the cluster's lease that must answer before keys are served again (0: none). */
  #rereadDue = 0;
  #rereads = 0;
  readonly #activeOf: (cluster: string) => string | undefined;
  /**
   * Per slot: the map generation in which this cluster gained it, until an epoch taken after that
   * is in use (0: nothing pending). Before its first map a node owns no slot, so the first map's
   * slots are all gained: an epoch taken before the node knew them proves nothing.
   */
  readonly #gainedAt = new Uint32Array(KEY_SLOTS);
  #pendingSlots = 0;
  #generation = 0;
  /** Gains wait for an epoch (`requireEpochForGains`): only a node that can take one from a store. */
  #trackingGains = false;
  readonly #listeners: Array<() => void> = [];

  /**
   * `cluster`: this node's `--cluster-name`. `activeOf`: the active of another cluster if this node
   * knows it (its ownership lease's holder), to name it in `S` replies; else its first address.
   */
  constructor(
    cluster: string,
    options: { activeOf?: (cluster: string) => string | undefined; awaitMap?: boolean } = {},
  ) {
    this.cluster = cluster;
    this.#activeOf = options.activeOf ?? (() => undefined);
    this.#awaiting = options.awaitMap ?? false;
  }

  /**
   * Waiting for the store's map (lockd `--slot-map` until its first read, or a new active re-reading
   * it): a node must not serve a key before it knows the key is its cluster's, so keyed requests get
   * `NO_ACTIVE` meanwhile.
   */
  get awaitingMap(): boolean {
    return this.#awaiting || this.#rereadDue !== 0;
  }

  get map(): SlotMap | undefined {
    return this.#map;
  }

  /** Slots this cluster gained that it must not grant in before a fresh store epoch is in use. */
  get needsEpoch(): boolean {
    return this.#pendingSlots > 0;
  }

  /**
   * From now on, slots this cluster gains are refused (`SLOT_MOVING`) until `epochInUse` says an
   * epoch taken after the gain is in use; the slots it owns now count as gained now. SlotMoves
   * calls it: it takes those epochs. (A node without a coordinator has no epochs to take.)
   */
  requireEpochForGains(): void {
    if (this.#trackingGains) return;
    this.#trackingGains = true;
    if (this.#map !== undefined) this.#noteGains(undefined, this.#map);
  }

  /** Runs `listener` after every change of the map in force (or of what waits on it). */
  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** A newer map from the store; an older or equal version (a late watch event) changes nothing. */
  update(map: SlotMap): boolean {
    if (this.#map !== undefined && map.version <= this.#map.version) return false;
    const previous = this.#map;
    this.#map = map;
    this.#awaiting = false;
    this.#noteGains(previous, map);
    this.#changed();
    return true;
  }

  /**
   * This node just took its cluster's lease: until it has read the map again (`reread`), it serves
   * no key. A map it learned by the watch may be older than a move its predecessor committed.
   */
  awaitReread(): number {
    this.#rereads += 1;
    this.#rereadDue = this.#rereads;
    return this.#rereads;
  }

  /**
   * The answer to re-read `ticket` (undefined: the store has no map). Only the latest re-read's
   * answer lets keys be served again: a watch event, or an earlier lease's read, may be older.
   */
  reread(ticket: number, map: SlotMap | undefined): void {
    if (ticket === this.#rereadDue) this.#rereadDue = 0;
    if (map !== undefined && this.update(map)) return;
    this.#changed();
  }

  /** A ticket for an epoch about to be taken from the store: what the node knows of the map now. */
  epochTicket(): number {
    return this.#generation;
  }

  /** An epoch asked for at `ticket` is in use: the slots gained up to then may be granted in. */
  epochInUse(ticket: number): void {
    if (this.#pendingSlots === 0) return;
    for (let slot = 0; slot < KEY_SLOTS; slot += 1) {
      const at = this.#gainedAt[slot]!;
      if (at !== 0 && at <= ticket) {
        this.#gainedAt[slot] = 0;
        this.#pendingSlots -= 1;
      }
    }
    this.#changed();
  }

  /** This node's cluster is in the map (a node that is not serves no key: every request is redirected). */
  get listed(): boolean {
    return this.#map === undefined || this.#map.clusters.has(this.cluster);
  }

  /** This cluster's ranges being moved away, in slot order. */
  outgoing(): OutgoingRange[] {
    return (this.#map?.ranges ?? []).filter(
      (range): range is OutgoingRange => range.cluster === this.cluster && range.movingTo !== undefined,
    );
  }

  /**
   * Whether a keyed request runs here, is redirected, or is refused for now. `serving`: this node
   * grants (its cluster's active); a node that does not redirects its own cluster's keys to the
   * active (`M`), which alone says whether a moving slot may be granted in.
   */
  check(request: KeyedRequest, serving = true): SlotVerdict {
    if (this.#awaiting)
      return {
        kind: "refuse",
        code: "NO_ACTIVE",
        message: "this node has not read the slot map from the coordinator yet",
      };
    if (this.#rereadDue !== 0)
      return {
        kind: "refuse",
        code: "NO_ACTIVE",
        message: "this node is re-reading the slot map after taking over",
      };
    const map = this.#map;
    if (map === undefined) return undefined;
    const slot = keySlot(request.key);
    const range = map.rangeOf(slot);
    if (range.cluster !== this.cluster)
      return { kind: "redirect", reply: this.#redirect(request, slot, range) };
    const grants = request.op !== "R" && request.op !== "C";
    if (!grants || !serving) return undefined;
    if (range.movingTo !== undefined)
      return {
        kind: "refuse",
        code: "SLOT_MOVING",
        message:
          request.op === "X"
            ? `slot ${slot} is moving to ${range.movingTo}: no lease in it is extended; release it here or let it expire`
            : `slot ${slot} is moving to ${range.movingTo}; retry shortly`,
      };
    if (this.#gainedAt[slot] !== 0)
      return {
        kind: "refuse",
        code: "SLOT_MOVING",
        message: `slot ${slot} has just moved here; retry shortly`,
      };
    return undefined;
  }

  #redirect(request: KeyedRequest, slot: number, range: SlotRange): SlotRedirectReply {
    const map = this.#map!;
    const owner = range.cluster;
    const address = this.#activeOf(owner) ?? map.clusters.get(owner)![0]!;
    const reply = {
      kind: "S",
      op: request.op,
      key: request.key,
      slot,
      version: map.version,
      cluster: owner,
      address,
    } as const;
    const id = "id" in request ? request.id : undefined;
    return id === undefined ? reply : { ...reply, id };
  }

  /** Marks the slots `next` gives this cluster that `previous` did not (see `#gainedAt`). */
  #noteGains(previous: SlotMap | undefined, next: SlotMap): void {
    if (!this.#trackingGains) return;
    const generation = ++this.#generation;
    for (const range of next.ranges) {
      for (let slot = range.from; slot <= range.to; slot += 1) {
        const ownsNow = range.cluster === this.cluster;
        const ownedBefore = previous !== undefined && previous.rangeOf(slot).cluster === this.cluster;
        const pending = this.#gainedAt[slot] !== 0;
        if (ownsNow && !ownedBefore && !pending) {
          this.#gainedAt[slot] = generation;
          this.#pendingSlots += 1;
        } else if (!ownsNow && pending) {
          this.#gainedAt[slot] = 0;
          this.#pendingSlots -= 1;
        }
      }
    }
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}
