import { isValidAddress } from "./address.js";
import { KEY_SLOTS, keySlot } from "./key-slot.js";

/**
 * Which cluster serves which key slots (docs/protocol.md, "Key slots"): a versioned map kept in the
 * coordination store, the same for every node and client that read the same version. Every slot
 * belongs to exactly one cluster. A range being moved still belongs to its source until the move
 * commits (a new version); `movingTo` names the target meanwhile.
 */
export interface SlotRange {
  /** First and last slot of the range, inclusive. */
  readonly from: number;
  readonly to: number;
  readonly cluster: string;
  readonly movingTo?: string;
}

/** Limits that keep a map within one `K` reply line and cheap to look up. */
export const MAX_SLOT_MAP_CLUSTERS = 64;
export const MAX_SLOT_MAP_RANGES = 1_024;
export const MAX_CLUSTER_ADDRESSES = 16;
/** The longest map in a `K` reply (its fields joined), well inside the 64 KiB default line limit. */
export const MAX_SLOT_MAP_BYTES = 32_768;

const CLUSTER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** A cluster's name (`--cluster-name`): 1 to 64 of `A-Z a-z 0-9 . _ -`. */
export function isValidClusterName(name: string): boolean {
  return CLUSTER_NAME.test(name);
}

/** A slot map that breaks a rule (code `SLOT_MAP_INVALID`): the message says which. */
export class SlotMapError extends Error {
  readonly code = "SLOT_MAP_INVALID";
  override readonly name = "SlotMapError";
}

export class SlotMap {
  /** The store's version of this map: higher is newer. 0 only for `SlotMap.NONE`. */
  readonly version: bigint;
  /** Each cluster's client addresses (`host:port`), in its peers-list order. */
  readonly clusters: ReadonlyMap<string, readonly string[]>;
  /** Sorted by `from`, covering slots 0 to 16383 with no gap or overlap. */
  readonly ranges: readonly SlotRange[];
  /** The index in `ranges` of each slot's range. */
  readonly #rangeOfSlot: Uint16Array;

  private constructor(
    version: bigint,
    clusters: ReadonlyMap<string, readonly string[]>,
    ranges: SlotRange[],
  ) {
    this.version = version;
    this.clusters = clusters;
    this.ranges = ranges;
    this.#rangeOfSlot = new Uint16Array(KEY_SLOTS);
    for (const [index, range] of ranges.entries()) this.#rangeOfSlot.fill(index, range.from, range.to + 1);
  }

  /**
   * Checks and builds a map; throws SlotMapError naming the first rule broken: cluster names
   * (`[A-Za-z0-9._-]{1,64}`), 1 to 16 addresses each, ranges within 0–16383 that cover every slot
   * once, clusters named by ranges defined, and the limits above.
   */
  static of(
    version: bigint,
    clusters: ReadonlyMap<string, readonly string[]>,
    ranges: readonly SlotRange[],
  ): SlotMap {
    if (version < 1n) throw new SlotMapError(`the version must be at least 1, got ${version}`);
    if (clusters.size === 0 || clusters.size > MAX_SLOT_MAP_CLUSTERS)
      throw new SlotMapError(`a slot map names 1 to ${MAX_SLOT_MAP_CLUSTERS} clusters, got ${clusters.size}`);
    for (const [name, addresses] of clusters) {
      if (!isValidClusterName(name)) throw new SlotMapError(`bad cluster name ${JSON.stringify(name)}`);
      if (addresses.length === 0 || addresses.length > MAX_CLUSTER_ADDRESSES)
        throw new SlotMapError(`cluster ${name} needs 1 to ${MAX_CLUSTER_ADDRESSES} addresses`);
      for (const address of addresses)
        if (!isValidAddress(address))
          throw new SlotMapError(`cluster ${name}: ${JSON.stringify(address)} is not host:port`);
    }
    if (ranges.length > MAX_SLOT_MAP_RANGES)
      throw new SlotMapError(`a slot map has at most ${MAX_SLOT_MAP_RANGES} ranges, got ${ranges.length}`);
    const sorted = [...ranges].sort((a, b) => a.from - b.from);
    let next = 0;
    for (const range of sorted) {
      const { from, to, cluster, movingTo } = range;
      if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to >= KEY_SLOTS || from > to)
        throw new SlotMapError(`bad range ${from}-${to}: slots are 0 to ${KEY_SLOTS - 1}, first ≤ last`);
      if (from !== next)
        throw new SlotMapError(
          from < next ? `ranges overlap at slot ${from}` : `slots ${next}-${from - 1} belong to no cluster`,
        );
      for (const name of movingTo === undefined ? [cluster] : [cluster, movingTo])
        if (!clusters.has(name)) throw new SlotMapError(`range ${from}-${to} names unknown cluster ${name}`);
      if (movingTo === cluster) throw new SlotMapError(`range ${from}-${to} moves to the cluster it is on`);
      next = to + 1;
    }
    if (next !== KEY_SLOTS) throw new SlotMapError(`slots ${next}-${KEY_SLOTS - 1} belong to no cluster`);
    const map = new SlotMap(version, clusters, sorted);
    const bytes = new TextEncoder().encode(map.toFields().join(" ")).length;
    if (bytes > MAX_SLOT_MAP_BYTES)
      throw new SlotMapError(`the map takes ${bytes} bytes in a K reply, over ${MAX_SLOT_MAP_BYTES}`);
    return map;
  }

  /** The range slot `slot` is in. */
  rangeOf(slot: number): SlotRange {
    return this.ranges[this.#rangeOfSlot[slot]!]!;
  }

  /** The cluster that serves `key` in this map (a moving range's source until the move commits). */
  clusterOf(key: string): string {
    return this.rangeOf(keySlot(key)).cluster;
  }

  /**
   * The map with slots `from`–`to` marked as moving to `target` (the next version: `version`): the
   * first step of a move. Every slot of the span must belong to one cluster other than `target`,
   * with no move under way; throws SlotMapError otherwise.
   */
  withMoveBegun(from: number, to: number, target: string, version: bigint): SlotMap {
    const owner = this.#spanOwner(from, to);
    if (owner.movingTo !== undefined) throw new SlotMapError(`slots ${from}-${to} are already moving`);
    if (owner.cluster === target) throw new SlotMapError(`slots ${from}-${to} are ${target}'s already`);
    if (!this.clusters.has(target)) throw new SlotMapError(`unknown cluster ${target}`);
    return this.#withSpan(from, to, { cluster: owner.cluster, movingTo: target }, version);
  }

  /** The map with the move of `from`–`to` done: its target owns the span (the next version: `version`). */
  withMoveCommitted(from: number, to: number, version: bigint): SlotMap {
    const owner = this.#spanOwner(from, to);
    if (owner.movingTo === undefined) throw new SlotMapError(`slots ${from}-${to} are not moving`);
    return this.#withSpan(from, to, { cluster: owner.movingTo }, version);
  }

  /** The one range state every slot of `from`–`to` shares; throws if they differ. */
  #spanOwner(from: number, to: number): { cluster: string; movingTo?: string | undefined } {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to >= KEY_SLOTS || from > to)
      throw new SlotMapError(`bad range ${from}-${to}: slots are 0 to ${KEY_SLOTS - 1}, first ≤ last`);
    const first = this.rangeOf(from);
    if (this.rangeOf(to) !== first)
      throw new SlotMapError(`slots ${from}-${to} span several ranges: move one range at a time`);
    return first;
  }

  /** This map with `from`–`to` cut out of its range and given `state`, neighbours merged back. */
  #withSpan(
    from: number,
    to: number,
    state: { cluster: string; movingTo?: string },
    version: bigint,
  ): SlotMap {
    const ranges: SlotRange[] = [];
    const push = (range: SlotRange) => {
      const last = ranges.at(-1);
      if (
        last &&
        last.to + 1 === range.from &&
        last.cluster === range.cluster &&
        last.movingTo === range.movingTo
      )
        ranges[ranges.length - 1] = { ...last, to: range.to };
      else ranges.push(range);
    };
    for (const range of this.ranges) {
      if (range.to < from || range.from > to) {
        push(range);
        continue;
      }
      if (range.from < from) push({ ...range, to: from - 1 });
      push({ from, to, ...state });
      if (range.to > to) push({ ...range, from: to + 1 });
    }
    return SlotMap.of(version, this.clusters, ranges);
  }

  /**
   * The map as the fields of a `K` reply after the version: `<cluster>=<address>,...` for every
   * cluster, then `<from>-<to>:<cluster>` (or `:<cluster>><target>` while moving) for every range.
   */
  toFields(): string[] {
    const fields: string[] = [];
    for (const [name, addresses] of this.clusters) fields.push(`${name}=${addresses.join(",")}`);
    for (const { from, to, cluster, movingTo } of this.ranges)
      fields.push(`${from}-${to}:${cluster}${movingTo === undefined ? "" : `>${movingTo}`}`);
    return fields;
  }

  /** Reads what `toFields` wrote; throws SlotMapError for anything else. */
  static fromFields(version: bigint, fields: readonly string[]): SlotMap {
    const clusters = new Map<string, readonly string[]>();
    const ranges: SlotRange[] = [];
    for (const field of fields) {
      const equals = field.indexOf("=");
      if (equals > 0) {
        const name = field.slice(0, equals);
        if (clusters.has(name)) throw new SlotMapError(`cluster ${name} is named twice`);
        clusters.set(name, field.slice(equals + 1).split(","));
        continue;
      }
      const match = /^(\d{1,5})-(\d{1,5}):([^>]+)(?:>(.+))?$/.exec(field);
      if (!match) throw new SlotMapError(`${JSON.stringify(field)} is neither a cluster nor a range`);
      const range = { from: Number(match[1]), to: Number(match[2]), cluster: match[3]! };
      ranges.push(match[4] === undefined ? range : { ...range, movingTo: match[4] });
    }
    return SlotMap.of(version, clusters, ranges);
  }

  /** The map as the coordination store's document holds it (JSON; the version is the store's). */
  toDocument(): string {
    return JSON.stringify({
      clusters: Object.fromEntries(this.clusters),
      ranges: this.ranges.map(({ from, to, cluster, movingTo }) =>
        movingTo === undefined ? { from, to, cluster } : { from, to, cluster, movingTo },
      ),
    });
  }

  /** Reads a store document (`toDocument`, or an operator's file of the same shape). */
  static fromDocument(version: bigint, text: string): SlotMap {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new SlotMapError(`not JSON: ${(error as Error).message}`);
    }
    const shape = parsed as { clusters?: unknown; ranges?: unknown };
    if (
      typeof shape !== "object" ||
      shape === null ||
      typeof shape.clusters !== "object" ||
      !Array.isArray(shape.ranges)
    )
      throw new SlotMapError(`expected {"clusters": {name: [addresses]}, "ranges": [{from, to, cluster}]}`);
    const clusters = new Map<string, readonly string[]>();
    for (const [name, addresses] of Object.entries(shape.clusters as object)) {
      if (!Array.isArray(addresses) || !addresses.every((a) => typeof a === "string"))
        throw new SlotMapError(`cluster ${name}: addresses must be a list of "host:port" strings`);
      clusters.set(name, addresses);
    }
    const ranges = (shape.ranges as unknown[]).map((entry): SlotRange => {
      const { from, to, cluster, movingTo } = (entry ?? {}) as Record<string, unknown>;
      if (typeof from !== "number" || typeof to !== "number" || typeof cluster !== "string")
        throw new SlotMapError(
          `a range needs numbers "from", "to" and a string "cluster": ${JSON.stringify(entry)}`,
        );
      if (movingTo !== undefined && typeof movingTo !== "string")
        throw new SlotMapError(`"movingTo" must name a cluster: ${JSON.stringify(entry)}`);
      return movingTo === undefined ? { from, to, cluster } : { from, to, cluster, movingTo };
    });
    return SlotMap.of(version, clusters, ranges);
  }
}
