import type { ErrorCode, KeyStateReply, Reply } from "@lock/protocol";
import { FREE, type HolderSummary, sameSummary } from "../engine/holder-summary.js";

/** Where the registry learns of holder changes and reads a key's holders: the node's engine. */
export interface HolderChanges {
  onHolderChange(hook: ((key: string) => void) | undefined): void;
  holderSummary(key: string): HolderSummary;
}

export interface WatchLimits {
  /** Keys one connection watches (`TOO_MANY_CONNECTION_WATCHES`). */
  readonly maxWatchesPerConnection: number;
  /** Watches of all connections together (`TOO_MANY_WATCHES`). */
  readonly maxWatches: number;
}

/** A watched key: who watches it, and the state last told (a change that changes nothing is not pushed). */
interface WatchedKey {
  readonly watchers: Set<ConnectionWatches>;
  last: HolderSummary;
}

/**
 * Which connections watch which keys (docs/protocol.md, "Watching a key"), and the pushes of holder
 * changes to them. One per node. Memory is bounded by the limits: one entry per (connection, key).
 * The engine's hook is installed only while something is watched, so a node nobody watches pays one
 * undefined check per grant and free. Pushes go out synchronously from the hook, in engine order;
 * each connection's output queue (and its cap, `SLOW_READER`) takes them from there.
 */
export class WatchRegistry {
  readonly #source: HolderChanges;
  readonly #limits: WatchLimits;
  readonly #keys = new Map<string, WatchedKey>();
  #count = 0;

  constructor(source: HolderChanges, limits: WatchLimits) {
    this.#source = source;
    this.#limits = limits;
  }

  /** Watches of all connections. */
  get count(): number {
    return this.#count;
  }

  /** A connection's watches; `push` sends one line on it (a state, or the end of a watch). */
  connection(push: (reply: Reply) => void): ConnectionWatches {
    return new ConnectionWatches(this, push);
  }

  /** @internal ConnectionWatches.watch: the refusal code, or the key's current state. */
  add(watcher: ConnectionWatches, key: string): KeyStateReply | ErrorCode {
    let watched = this.#keys.get(key);
    if (!watched?.watchers.has(watcher)) {
      if (watcher.size >= this.#limits.maxWatchesPerConnection) return "TOO_MANY_CONNECTION_WATCHES";
      if (this.#count >= this.#limits.maxWatches) return "TOO_MANY_WATCHES";
      if (this.#count === 0) this.#source.onHolderChange(this.#changed);
      if (watched === undefined) {
        watched = { watchers: new Set(), last: FREE };
        this.#keys.set(key, watched);
      }
      watched.watchers.add(watcher);
      this.#count += 1;
    }
    watched.last = this.#source.holderSummary(key);
    return stateReply(key, watched.last);
  }

  /** @internal ConnectionWatches.unwatch / end. */
  remove(watcher: ConnectionWatches, key: string): void {
    const watched = this.#keys.get(key);
    if (!watched?.watchers.delete(watcher)) return;
    if (watched.watchers.size === 0) this.#keys.delete(key);
    this.#count -= 1;
    if (this.#count === 0) this.#source.onHolderChange(undefined);
  }

  /**
   * Ends the watches of every watched key `ending` answers with a reply (this node stopped serving
   * the key: with a slot map, its slot moved to another cluster), pushing that reply to its watchers.
   */
  endWhere(ending: (key: string) => Reply | undefined): void {
    for (const [key, watched] of [...this.#keys]) {
      const reply = ending(key);
      if (reply === undefined) continue;
      for (const watcher of [...watched.watchers]) {
        watcher.push(reply);
        watcher.unwatch(key);
      }
    }
  }

  readonly #changed = (key: string): void => {
    const watched = this.#keys.get(key);
    if (watched === undefined) return;
    const now = this.#source.holderSummary(key);
    if (sameSummary(now, watched.last)) return;
    watched.last = now;
    const reply = stateReply(key, now);
    for (const watcher of watched.watchers) watcher.push(reply);
  };
}

/** One connection's watched keys. Not shared between connections. */
export class ConnectionWatches {
  readonly #registry: WatchRegistry;
  readonly #keys = new Set<string>();
  /** @internal The registry's pushes. */
  readonly push: (reply: Reply) => void;

  constructor(registry: WatchRegistry, push: (reply: Reply) => void) {
    this.#registry = registry;
    this.push = push;
  }

  get size(): number {
    return this.#keys.size;
  }

  keys(): IterableIterator<string> {
    return this.#keys.values();
  }

  /** Watches `key` (again: idempotent): its current state, or the limit's code that refused it. */
  watch(key: string): KeyStateReply | ErrorCode {
    const answer = this.#registry.add(this, key);
    if (typeof answer !== "string") this.#keys.add(key);
    return answer;
  }

  /** True if the key was watched. */
  unwatch(key: string): boolean {
    if (!this.#keys.delete(key)) return false;
    this.#registry.remove(this, key);
    return true;
  }

  /** The connection is over, or its node stepped down: every watch ends. */
  end(): void {
    for (const key of this.#keys) this.#registry.remove(this, key);
    this.#keys.clear();
  }
}

function stateReply(key: string, state: HolderSummary): KeyStateReply {
  return { kind: "O", key, token: state.token, mode: state.mode, holders: state.holders };
}
