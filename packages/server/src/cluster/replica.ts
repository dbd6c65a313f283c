import type { ReplicatedExtendFrame, ReplicatedFreeFrame, ReplicatedGrantFrame } from "@lock/protocol";
import type { Snapshot } from "./peer/peer-session.js";

/** What a replica needs of the engine: its holder table, written directly. */
export interface ReplicaTable {
  installHolder(key: string, token: bigint, leaseMs: number, id: string | undefined): void;
  removeHolder(key: string): void;
  holder(key: string): { readonly id: string | undefined } | undefined;
  clear(): void;
}

/** A change of the active's holder table, as its stream carries it. */
export type TableChange = ReplicatedGrantFrame | ReplicatedFreeFrame | ReplicatedExtendFrame;

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
    for (const { key, token, remainingMs, id } of snapshot.holders)
      this.#table.installHolder(key, token, remainingMs, id);
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
      case "F":
        table.removeHolder(change.key);
        break;
      case "X":
        // The extension keeps the holder's id: its owner may release it after a failover.
        table.installHolder(change.key, change.token, change.leaseMs, table.holder(change.key)?.id);
        break;
    }
    return true;
  }

  /** This node stops following anyone (it became the active). */
  detach(): void {
    this.#source = undefined;
  }
}
