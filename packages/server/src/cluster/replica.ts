import {
  type LockMode,
  type ReplicatedExtendFrame,
  type ReplicatedFreeFrame,
  type ReplicatedGrantFrame,
  type ReplicatedSharedGrantFrame,
  WHOLE_KEY,
} from "@lock/protocol";
import type { Snapshot } from "./peer/peer-session.js";

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
  clear(): void;
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
 */
export class Replica {
  readonly #table: ReplicaTable;
  #source: string | undefined;
  #grantsApplied = 0;

  constructor(table: ReplicaTable) {
    this.#table = table;
  }

  /** The peer whose snapshot this replica holds, if any. */
  get source(): string | undefined {
    return this.#source;
  }

  /**
   * Grants applied from the stream (`!G`) since start: the active's grants as this standby saw them
   * (lockd's status page charts them). A stream folded for a standby that fell behind carries fewer.
   */
  get grantsApplied(): number {
    return this.#grantsApplied;
  }

  /** Replaces the table with `from`'s snapshot: from now on the replica follows `from`. */
  load(from: string, snapshot: Snapshot): void {
    this.#table.clear();
    for (const { key, token, remainingMs, id, mode, slot } of snapshot.holders)
      this.#table.installHolder(key, token, remainingMs, id, mode, slot ?? -1);
    this.#source = from;
  }

  /** Applies one change of `from`'s stream; false (and nothing changed) if `from` is not the source. */
  apply(from: string, change: TableChange): boolean {
    if (from !== this.#source) return false;
    const table = this.#table;
    switch (change.peer) {
      case "G":
        table.installHolder(change.key, change.token, change.leaseMs, change.id);
        this.#grantsApplied += 1;
        break;
      case "Q":
        table.installHolder(
          change.key,
          change.token,
          change.leaseMs,
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
        table.installExtension(change.key, change.token, change.leaseMs);
        break;
    }
    return true;
  }

  /** This node stops following anyone (it became the active). */
  detach(): void {
    this.#source = undefined;
  }
}
