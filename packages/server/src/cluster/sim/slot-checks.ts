import { KEY_SLOTS, keySlot, SlotMap } from "@lock/protocol";
import type { CoordinationState } from "../../coordination/memory-store.js";
import { SLOT_MAP_DOCUMENT } from "../../slots/slot-map-follower.js";

/**
 * The checks of a run of several clusters over one key space (docs/consistency.md, "Moving
 * slots"), beside History's (which checks that each key's tokens strictly increase in grant order,
 * across clusters and moves, and that no token is issued twice):
 *
 * - a grant (or a replayed grant) by a node of cluster C for a key whose slot the store's map gives,
 *   at that instant, to another cluster fails. A slot being moved is still its source's, so the
 *   target grants nothing between the write that begins a move and its commit; after the commit
 *   it is the target's, and the source grants nothing there. (The source may grant while the
 *   move is written but not yet read by it: the commit waits for what it granted to drain.);
 * - a grant in a slot the granting node itself knows is moving fails: its source refuses
 *   acquires there once it has read the move;
 * - the store's map changes a slot's cluster only by committing a move begun to that cluster;
 * - at the end, no move is left uncommitted.
 *
 * It follows the store's map as it is written (the store is in memory, so synchronously), and
 * counts moves begun and committed, and workload keys whose slot came back to a cluster it had
 * left (A→B→A): a run without them tested nothing of moves.
 */
export class SlotChecks {
  #map: SlotMap | undefined;
  readonly #fail: (what: string) => void;
  /** Per workload key: the clusters its slot has been on, in order. */
  readonly #owners = new Map<string, string[]>();
  readonly counts = { movesBegun: 0, movesCommitted: 0, keysMovedBack: 0 };

  constructor(state: CoordinationState, keys: readonly string[], fail: (what: string) => void) {
    this.#fail = fail;
    for (const key of keys) this.#owners.set(key, []);
    state.watchDocument(SLOT_MAP_DOCUMENT, (document) => {
      if (document === undefined) fail("the slot map was deleted");
      else this.#written(SlotMap.fromDocument(document.version, document.value));
    });
  }

  /**
   * Node `node` of `cluster` sent a grant of `key`; `known`: the map its gate had then.
   */
  granted(node: string, cluster: string, key: string, token: bigint, known: SlotMap | undefined): void {
    const map = this.#map;
    if (map === undefined) return;
    const slot = keySlot(key);
    const range = map.rangeOf(slot);
    const what = `${node} (cluster ${cluster}) granted ${key} ${token} in slot ${slot}`;
    if (range.cluster !== cluster) {
      const moving = range.movingTo === cluster ? `, moving here but not committed` : "";
      this.#fail(`${what}, which map v${map.version} gives to ${range.cluster}${moving}`);
    }
    const movingTo = known?.rangeOf(slot).movingTo;
    if (movingTo !== undefined)
      this.#fail(`${what}, which its own map v${known!.version} has moving to ${movingTo}`);
  }

  /** A move begun and not committed yet, if any. */
  pendingMove(): string | undefined {
    const range = this.#map?.ranges.find((candidate) => candidate.movingTo !== undefined);
    return (
      range &&
      `slots ${range.from}-${range.to} never finished moving from ${range.cluster} to ${range.movingTo}`
    );
  }

  /** After the run: every move begun was committed. */
  finalCheck(): void {
    const pending = this.pendingMove();
    if (pending !== undefined) this.#fail(pending);
  }

  #written(next: SlotMap): void {
    const previous = this.#map;
    this.#map = next;
    if (previous === undefined) {
      for (const [key, owners] of this.#owners) owners.push(next.clusterOf(key));
      return;
    }
    for (let slot = 0; slot < KEY_SLOTS; slot += 1) {
      const before = previous.rangeOf(slot);
      const after = next.rangeOf(slot);
      if (after.cluster !== before.cluster && after.cluster !== before.movingTo)
        this.#fail(`map v${next.version} gave slot ${slot} to ${after.cluster} without a move there`);
    }
    for (const range of next.ranges) {
      const before = previous.rangeOf(range.from);
      if (range.movingTo !== undefined && before.movingTo === undefined) this.counts.movesBegun += 1;
    }
    for (const range of previous.ranges)
      if (range.movingTo !== undefined && next.rangeOf(range.from).cluster === range.movingTo)
        this.counts.movesCommitted += 1;
    for (const [key, owners] of this.#owners) {
      const owner = next.clusterOf(key);
      if (owner === owners.at(-1)) continue;
      if (owners.includes(owner)) this.counts.keysMovedBack += 1;
      owners.push(owner);
    }
  }
}
