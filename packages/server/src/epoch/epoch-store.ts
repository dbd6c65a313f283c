/**
 * Where a node keeps the highest epoch it has taken or heard of, across restarts. `write` must be
 * durable when it returns (the file store fsyncs): a node acts on an epoch only after it is stored.
 */
export interface EpochStore {
  /** A description for errors and logs, e.g. the file's path. */
  readonly name: string;
  /** The stored epoch, 0 if none was ever written. Throws `EpochStoreError` when unreadable. */
  read(): bigint;
  write(epoch: bigint): void;
}

/** The stored epoch cannot be trusted: lockd refuses to start (exit 2) rather than guess. */
export class EpochStoreError extends Error {
  readonly code = "EPOCH_STORE_INVALID";
  override readonly name = "EpochStoreError";
}

/** An in-memory store: for tests and the simulator. `writes` counts durable writes. */
export class MemoryEpochStore implements EpochStore {
  readonly name = "memory";
  epoch: bigint;
  writes = 0;

  constructor(epoch = 0n) {
    this.epoch = epoch;
  }

  read(): bigint {
    return this.epoch;
  }

  write(epoch: bigint): void {
    this.epoch = epoch;
    this.writes += 1;
  }
}
