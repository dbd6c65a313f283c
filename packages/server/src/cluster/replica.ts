import type { TimerQueue } from "@lock/deadline-heap";
import {
  type LockMode,
  type ReplicatedExtendFrame,
  type ReplicatedFreeFrame,
  type ReplicatedGrantFrame,
  type ReplicatedSharedGrantFrame,
  WHOLE_KEY,
} from "@lock/protocol";
import type { Snapshot } from "./peer/peer-session.js";
import { DEFAULT_LOAD_PACING, type LoadPacing, type LoadTarget, SnapshotLoad } from "./snapshot-load.js";

/** What a replica needs of the engine: its holder table, written directly (LockEngine). */
export interface ReplicaTable {
  /** `mode` and `slot` (-1 when none) for a shared holder or permit; absent: exclusive. */
  installHolder(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    mode?: LockMode,
    slot?: number,
  ): void;
  installExtension(key: string, token: bigint, leaseMs: number): void;
  /** Drops the holder `token` of `key`; with no token, every holder of the key. */
  removeHolder(key: string, token?: bigint): void;
  /** Forgets up to `count` keys; false once the table is empty (LockEngine.clearSome). */
  clearSome(count: number): boolean;
}

/** A change of the active's holder table, as its stream carries it. */
export type TableChange =
  | ReplicatedGrantFrame
  | ReplicatedSharedGrantFrame
  | ReplicatedFreeFrame
  | ReplicatedExtendFrame;

/**
 * The standby's side of replication, pure: the holder table follows one active's stream. A
 * snapshot replaces the table and names its source; changes apply only from that source, in the
 * order its session checked them (peer-session.ts), so a stream from anyone else, or one that
 * started before the snapshot, never touches the table.
 *
 * A snapshot is loaded over many event-loop turns (SnapshotLoad, on the node's timer queue): until
 * it is whole in the table, the replica has no source, and its source's changes wait for it.
 */
export class Replica {
  readonly #table: ReplicaTable;
  readonly #timers: TimerQueue;
  readonly #pacing: LoadPacing;
  #source: string | undefined;
  /** The snapshot being loaded, and whose it is. */
  #load: { readonly from: string; readonly run: SnapshotLoad<TableChange> } | undefined;
  #grantsApplied = 0;
  readonly #target: LoadTarget<TableChange> = {
    clearSome: (count) => this.#table.clearSome(count),
    // A lease counts from when the snapshot was complete, as if it had been loaded at once.
    install: (holder, lateMs) =>
      this.#table.installHolder(
        holder.key,
        holder.token,
        Math.max(0, holder.remainingMs - lateMs),
        holder.id,
        holder.mode,
        holder.slot ?? -1,
      ),
    apply: (change, lateMs) => this.#apply(change, lateMs),
  };

  /** `timers`: the node's queue, which paces a snapshot's load. */
  constructor(table: ReplicaTable, timers: TimerQueue, pacing: LoadPacing = DEFAULT_LOAD_PACING) {
    this.#table = table;
    this.#timers = timers;
    this.#pacing = pacing;
  }

  /** The peer whose snapshot this replica holds whole, if any. */
  get source(): string | undefined {
    return this.#source;
  }

  /** The peer whose snapshot is being loaded, if any. */
  get loadingFrom(): string | undefined {
    return this.#load?.from;
  }

  /**
   * Grants applied from the stream (`!G`) since start: the active's grants as this standby saw them
   * (lockd's status page charts them). A stream folded for a standby that fell behind carries fewer.
   */
  get grantsApplied(): number {
    return this.#grantsApplied;
  }

  /**
   * Starts replacing the table with `from`'s snapshot (a load under way stops where it is) and
   * takes `from`'s changes from now on; `loaded` is called once the snapshot, and the changes that
   * came meanwhile, are in the table, and `from` is the source from then on. The snapshot's holders
   * are the load's: it takes them as it goes.
   */
  load(from: string, snapshot: Snapshot, loaded: () => void): void {
    this.#load?.run.cancel();
    this.#source = undefined;
    const run = new SnapshotLoad(this.#target, snapshot.holders, this.#timers, this.#pacing, () => {
      this.#load = undefined;
      this.#source = from;
      loaded();
    });
    this.#load = { from, run };
  }

  /**
   * Takes one change of `from`'s stream: applied now, or after the snapshot being loaded from
   * `from`; false (and nothing changed) if `from` is neither the source nor loading.
   */
  apply(from: string, change: TableChange): boolean {
    const load = this.#load;
    if (load !== undefined) {
      if (from !== load.from) return false;
      load.run.queue(change);
      return true;
    }
    if (from !== this.#source) return false;
    this.#apply(change, 0);
    return true;
  }

  /** This node stops following anyone (it became the active); a load under way stops. */
  detach(): void {
    this.#load?.run.cancel();
    this.#load = undefined;
    this.#source = undefined;
  }

  /** `lateMs`: how long the change waited for a load (its lease counts from its arrival). */
  #apply(change: TableChange, lateMs: number): void {
    const table = this.#table;
    switch (change.peer) {
      case "G":
        table.installHolder(change.key, change.token, leaseLeft(change.leaseMs, lateMs), change.id);
        this.#grantsApplied += 1;
        break;
      case "Q":
        table.installHolder(
          change.key,
          change.token,
          leaseLeft(change.leaseMs, lateMs),
          change.id,
          change.mode,
          change.slot ?? -1,
        );
        this.#grantsApplied += 1;
        break;
      case "F":
        // Token 0 (a folded key that had shared holders): every holder of the key goes.
        table.removeHolder(change.key, change.token === WHOLE_KEY ? undefined : change.token);
        break;
      case "X":
        // The extension keeps the holder's id: its owner may release it after a failover.
        table.installExtension(change.key, change.token, leaseLeft(change.leaseMs, lateMs));
        break;
    }
  }
}

function leaseLeft(leaseMs: number, lateMs: number): number {
  return lateMs === 0 ? leaseMs : Math.max(0, leaseMs - lateMs);
}
