import { keySlot, type Request, type SlotMap, type SlotRedirectReply } from "@lock/protocol";

/** The keyed verbs: every one of them is for the cluster that serves its key's slot. */
type KeyedRequest = Extract<Request, { key: string }>;

/**
 * Which keys this cluster serves, by the slot map it last read from the coordination store
 * (docs/protocol.md, "Key slots"). Without a map it serves every key, as a lone cluster always has.
 * With one, a keyed request for a slot of another cluster is answered `S`, naming that cluster
 * and where to find it; the request changes nothing here.
 *
 * A range being moved still belongs to its source until the move commits, so the source answers
 * for it and the target redirects to it meanwhile.
 */
export class SlotGate {
  readonly cluster: string;
  #map: SlotMap | undefined;
  /** A map is configured but not read from the store yet: no keyed request runs meanwhile. */
  #awaiting: boolean;
  readonly #activeOf: (cluster: string) => string | undefined;

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
   * Waiting for the store's map (lockd `--slot-map` until its first read): a node must not serve a
   * key before it knows the key is its cluster's, so keyed requests get `NO_ACTIVE` meanwhile.
   */
  get awaitingMap(): boolean {
    return this.#awaiting;
  }

  get map(): SlotMap | undefined {
    return this.#map;
  }

  /** A newer map from the store; an older or equal version (a late watch event) changes nothing. */
  update(map: SlotMap): boolean {
    if (this.#map !== undefined && map.version <= this.#map.version) return false;
    this.#map = map;
    this.#awaiting = false;
    return true;
  }

  /** This node's cluster is in the map (a node that is not serves no key: every request is redirected). */
  get listed(): boolean {
    return this.#map === undefined || this.#map.clusters.has(this.cluster);
  }

  /** The `S` reply for a request whose key another cluster serves; undefined if it is this one's. */
  redirect(request: KeyedRequest): SlotRedirectReply | undefined {
    const map = this.#map;
    if (map === undefined) return undefined;
    const slot = keySlot(request.key);
    const owner = map.rangeOf(slot).cluster;
    if (owner === this.cluster) return undefined;
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
    return request.id === undefined ? reply : { ...reply, id: request.id };
  }
}
