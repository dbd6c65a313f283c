import { keySlot, SlotMap, SlotMapError } from "@lock/protocol";
import type { CoordinationStore } from "../../coordination/store.js";
import { SLOT_MAP_DOCUMENT } from "../../slots/slot-map-follower.js";
import type { Scheduler } from "./scheduler.js";
import type { SimStore } from "./sim-store.js";

/** Between two tries of the operator's tool (a slot still moving, a store call that failed). */
const RETRY_MS = 100;
/** A move the operator could not begin (or see committed) for this long is given up. */
const GIVE_UP_MS = 15_000;

/** One move the nemesis asks for (nemesis.ts): the slot of `key`, and `width` slots after it. */
export interface MoveRequest {
  readonly key: string;
  readonly width: number;
  /** The target: this many clusters after the span's owner, in the map's order. */
  readonly shift: number;
  /** Once the move committed, move the span back to where it was (A→B→A). */
  readonly back: boolean;
}

/** A move the operator wrote to the store. */
interface Begun {
  readonly from: number;
  readonly to: number;
  readonly source: string;
  readonly target: string;
}

/**
 * The operator of a simulated deployment of several clusters: seeds the store's slot map, then
 * begins the moves the nemesis asks for as `lock slots move` would, over a store link of its own
 * (latency, a slow store): it reads the map, writes it with the span marked moving by a
 * compare-and-set, and reads again on a miss (a source's commit, another move, landed in between).
 * A span already moving is waited for. The commits are the sources' (SlotMoves), never its own.
 */
export class SlotOperator {
  readonly #store: CoordinationStore;
  readonly #scheduler: Scheduler;
  readonly #clusters: readonly string[];
  /** Settling its promises runs its code in continuations: the world must let them run. */
  readonly #ran: () => void;
  #busy = 0;
  /**
   * What the nemesis got done: moves begun, compare-and-set misses, moves back skipped (another
   * move changed their span meanwhile), and moves given up (not begun, or not committed, in time).
   */
  readonly counts = { begun: 0, casMisses: 0, skipped: 0, gaveUp: 0 };
  log: ((line: string) => void) | undefined;

  constructor(store: SimStore, scheduler: Scheduler, initial: SlotMap, ran: () => void) {
    store.state.writeDocument(SLOT_MAP_DOCUMENT, initial.toDocument(), 0n);
    this.#store = store.clientFor({ name: "operator", up: true, incarnation: 0, defer: (work) => work() });
    this.#scheduler = scheduler;
    this.#clusters = [...initial.clusters.keys()];
    this.#ran = ran;
  }

  /** Moves still being begun or waited for. */
  get busy(): boolean {
    return this.#busy > 0;
  }

  /** Begins the move of `request.key`'s slot (and maybe its return once committed). */
  move(request: MoveRequest): void {
    this.#busy += 1;
    this.#run(request)
      .catch((error: unknown) => this.log?.(`operator: ${String(error)}`))
      .finally(() => {
        this.#busy -= 1;
      });
  }

  async #run(request: MoveRequest): Promise<void> {
    const begun = await this.#begin((map) => this.#firstSpan(map, request));
    if (begun === undefined || !request.back) return;
    if (!(await this.#committed(begun))) return;
    await this.#begin((map) => this.#returnSpan(map, begun));
  }

  /** The span a request moves in `map`: "wait" while it is moving. */
  #firstSpan(map: SlotMap, { key, width, shift }: MoveRequest): Begun | "wait" {
    const slot = keySlot(key);
    const range = map.rangeOf(slot);
    if (range.movingTo !== undefined) return "wait";
    const index = this.#clusters.indexOf(range.cluster);
    const target = this.#clusters[(index + shift) % this.#clusters.length]!;
    return { from: slot, to: Math.min(slot + width, range.to), source: range.cluster, target };
  }

  /** The way back of a committed move: undefined if its span is no longer one range of its target. */
  #returnSpan(map: SlotMap, { from, to, source, target }: Begun): Begun | "wait" | undefined {
    const range = map.rangeOf(from);
    if (range.cluster !== target || map.rangeOf(to) !== range) return undefined;
    if (range.movingTo !== undefined) return "wait";
    return { from, to, source: target, target: source };
  }

  /**
   * Writes the map with the span `pick` chooses marked moving, retrying on a miss, a store error or
   * a span still moving; undefined if given up.
   */
  async #begin(pick: (map: SlotMap) => Begun | "wait" | undefined): Promise<Begun | undefined> {
    const deadline = this.#scheduler.now + GIVE_UP_MS;
    /** A write whose answer did not come: it may have taken effect. */
    let unsure: Begun | undefined;
    while (this.#scheduler.now < deadline) {
      const map = await this.#read();
      if (map === undefined) continue;
      if (unsure && isMoving(map, unsure)) return this.#begun(unsure);
      unsure = undefined;
      const span = pick(map);
      if (span === undefined) {
        this.counts.skipped += 1;
        return undefined;
      }
      if (span === "wait") {
        await this.#sleep(RETRY_MS);
        continue;
      }
      const next = map.withMoveBegun(span.from, span.to, span.target, map.version + 1n);
      try {
        const written = await this.#store.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), map.version);
        if (written !== undefined) return this.#begun(span);
        this.counts.casMisses += 1;
      } catch {
        unsure = span;
        await this.#sleep(RETRY_MS);
      }
    }
    this.counts.gaveUp += 1;
    this.log?.("operator: gave up beginning a move");
    return undefined;
  }

  #begun(span: Begun): Begun {
    this.counts.begun += 1;
    this.log?.(`operator: slots ${span.from}-${span.to} begin moving ${span.source} -> ${span.target}`);
    return span;
  }

  /** Waits until the span no longer moves (its source committed); false if that took too long. */
  async #committed(span: Begun): Promise<boolean> {
    const deadline = this.#scheduler.now + GIVE_UP_MS;
    while (this.#scheduler.now < deadline) {
      const map = await this.#read();
      if (map !== undefined && !isMoving(map, span)) return true;
      await this.#sleep(RETRY_MS);
    }
    this.counts.gaveUp += 1;
    this.log?.(`operator: gave up waiting for slots ${span.from}-${span.to} to move`);
    return false;
  }

  /** The store's map, or undefined after a failed read (having paused). */
  async #read(): Promise<SlotMap | undefined> {
    try {
      const document = await this.#store.readDocument(SLOT_MAP_DOCUMENT);
      if (document !== undefined) return SlotMap.fromDocument(document.version, document.value);
    } catch (error) {
      if (error instanceof SlotMapError) throw error;
    }
    await this.#sleep(RETRY_MS);
    return undefined;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) =>
      this.#scheduler.after(ms, () => {
        this.#ran();
        resolve();
      }),
    );
  }
}

function isMoving(map: SlotMap, { from, source, target }: Begun): boolean {
  const range = map.rangeOf(from);
  return range.cluster === source && range.movingTo === target;
}
