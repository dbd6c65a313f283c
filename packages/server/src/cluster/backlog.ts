import {
  type LockMode,
  type ReplicatedFreeFrame,
  type ReplicatedGrantFrame,
  type ReplicatedSharedGrantFrame,
  WHOLE_KEY,
} from "@lock/protocol";

/** One holder as a snapshot or a fold sends it (LockEngine.holders); `mode` absent: exclusive; `slot` -1: none. */
export interface SnapshotHolder {
  readonly key: string;
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id: string | undefined;
  readonly mode?: LockMode;
  readonly slot?: number;
}

/** A change as the replicator publishes it; an extension carries the holder's id for folding. */
export type Change =
  | ReplicatedGrantFrame
  | ReplicatedSharedGrantFrame
  /** `shared`: the holder freed was a shared holder or a permit (not on the wire). */
  | (ReplicatedFreeFrame & { readonly shared?: boolean })
  | {
      readonly peer: "X";
      readonly seq: number;
      readonly key: string;
      readonly token: bigint;
      readonly leaseMs: number;
      readonly id: string | undefined;
      /** The holder is a shared holder or a permit. */
      readonly shared?: boolean;
    };

/**
 * What a standby that was behind is sent for a key: its final state. A key that had shared holders
 * or permits meanwhile is sent as `!F <key> 0` (drop every holder of the key), then each holder.
 */
export type FoldedFrame = ReplicatedGrantFrame | ReplicatedSharedGrantFrame | ReplicatedFreeFrame;

/** A key's latest state, recorded while some standby is behind. */
interface KeyState {
  /** Sequence number of the key's latest change. */
  seq: number;
  /** Sequence number of the first change recorded since the entry was made. */
  firstSeq: number;
  /**
   * Whether the key was held just before `firstSeq`. A grant always takes a free key (a handoff is
   * a free, then a grant), so only an entry made by a grant starts from a free key.
   */
  heldBefore: boolean;
  held: boolean;
  token: bigint;
  /** Lease end on this node's clock: the remaining duration is computed when the frame is sent. */
  deadline: number;
  id: string | undefined;
  /**
   * The key had shared holders or permits since the entry was made: its fold is all its current
   * holders, read from the engine (those granted before the entry was made are not recorded here).
   */
  shared: boolean;
}

/** The current holders of a key, as the engine has them (LockEngine.keyHolders). */
export type CurrentHolders = (key: string) => readonly SnapshotHolder[];

/**
 * The latest state of every key changed while at least one standby is behind, shared by all of
 * them: one map update per change however many standbys fold. A standby that was sent everything up
 * to sequence `s` catches up with the state of each key changed after `s`: whatever happened to a
 * key in between, only its final state matters, so a lock granted and freed while the standby was
 * busy costs one frame, and the table holds at most one entry per key however long a standby stalls.
 */
export class Backlog {
  readonly #keys = new Map<string, KeyState>();
  /**
   * Pruned entries, reused: a standby that stays behind would otherwise cost an allocation per key
   * per round, each living just long enough to be copied by the garbage collector.
   */
  readonly #spare: KeyState[] = [];
  #lastSeq = 0;
  /** The token of the latest grant recorded: a bundle's keys come as grants in a row with one token. */
  #lastGrantToken = 0n;
  /** A bundle was recorded: folds then send each token's grants in a row (see `changedSince`). */
  #bundles = false;

  get size(): number {
    return this.#keys.size;
  }

  /** Sequence number of the latest change recorded. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Records a change; `deadline` is a lease's end on this node's clock (ignored for a free). */
  record(change: Change, deadline: number): void {
    const { seq, key } = change;
    this.#lastSeq = seq;
    if (change.peer === "G") {
      if (change.token === this.#lastGrantToken) this.#bundles = true;
      this.#lastGrantToken = change.token;
    }
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = this.#spare.pop() ?? {
        seq,
        firstSeq: seq,
        heldBefore: false,
        held: false,
        token: 0n,
        deadline: 0,
        id: undefined,
        shared: false,
      };
      state.firstSeq = seq;
      // A shared grant may join holders the key already had.
      state.heldBefore = change.peer !== "G";
      this.#keys.set(key, state);
    }
    state.seq = seq;
    if (change.peer === "Q" || ((change.peer === "X" || change.peer === "F") && change.shared === true))
      state.shared = true;
    if (state.shared) return;
    state.token = change.token;
    if (change.peer === "F") {
      state.held = false;
      return;
    }
    state.held = true;
    state.deadline = deadline;
    state.id = change.id;
  }

  /**
   * The state of every key changed after `since`, each frame stamped with the latest sequence
   * number recorded: a standby's acknowledgement of it means it has caught up to there. A key that
   * was free when the standby was last sent anything and is free again needs no frame: a lock taken
   * and released meanwhile, the usual life of a lock on a key never used again, costs it nothing.
   * If that leaves nothing to send, one such free (a no-op for the standby) still goes out: the
   * standby acknowledges sequence numbers only as frames carry them.
   */
  changedSince(since: number, now: number, current: CurrentHolders = noSharedKeys): FoldedFrame[] {
    const seq = this.#lastSeq;
    const frames: FoldedFrame[] = [];
    let skippedKey: string | undefined;
    let skippedToken = 0n;
    for (const [key, state] of this.#keys) {
      if (state.seq <= since) continue;
      if (state.shared) {
        foldShared(frames, seq, key, current(key));
        continue;
      }
      if (!state.held) {
        if (!state.heldBefore && since < state.firstSeq) {
          skippedKey = key;
          skippedToken = state.token;
          continue;
        }
        // The standby drops whatever it holds for the key (the token is informational).
        frames.push({ peer: "F", seq, key, token: state.token });
        continue;
      }
      const leaseMs = Math.max(0, Math.ceil(state.deadline - now));
      frames.push(
        state.id === undefined
          ? { peer: "G", seq, key, token: state.token, leaseMs }
          : { peer: "G", seq, key, token: state.token, leaseMs, id: state.id },
      );
    }
    if (frames.length === 0 && skippedKey !== undefined) {
      frames.push({ peer: "F", seq, key: skippedKey, token: skippedToken });
    }
    return this.#bundles ? grantsInRows(frames) : frames;
  }

  /** Forgets keys whose latest change is at or before `upTo`: every standby has been sent them. */
  prune(upTo: number): void {
    for (const [key, state] of this.#keys) {
      if (state.seq > upTo) continue;
      this.#keys.delete(key);
      if (this.#spare.length < MAX_SPARE) {
        state.id = undefined;
        state.shared = false;
        this.#spare.push(state);
      }
    }
  }

  clear(): void {
    this.#keys.clear();
    this.#bundles = false;
  }
}

const MAX_SPARE = 16_384;

/**
 * The frames with every exclusive grant moved to the end, ordered by token: a bundle's keys (one
 * token) then arrive in a row, which is how a standby ties them into one bundle again
 * (LockEngine.installHolder). A fold has one entry per key, so moving a key's frame past another
 * key's changes nothing else.
 */
function grantsInRows(frames: FoldedFrame[]): FoldedFrame[] {
  const grants = frames.filter((frame) => frame.peer === "G");
  grants.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
  return [...frames.filter((frame) => frame.peer !== "G"), ...grants];
}

/**
 * A key that had shared holders or permits: the standby drops every holder it has for it, then
 * takes the key's current ones (a grant before the entry was made may still hold it).
 */
function foldShared(
  frames: FoldedFrame[],
  seq: number,
  key: string,
  holders: readonly SnapshotHolder[],
): void {
  frames.push({ peer: "F", seq, key, token: WHOLE_KEY });
  for (const { token, remainingMs: leaseMs, id, mode, slot } of holders) {
    const frame: FoldedFrame =
      mode === undefined || mode.kind === "exclusive"
        ? { peer: "G", seq, key, token, leaseMs }
        : {
            peer: "Q",
            seq,
            key,
            token,
            leaseMs,
            mode,
            slot: slot === undefined || slot < 0 ? undefined : slot,
          };
    frames.push(id === undefined ? frame : { ...frame, id });
  }
}

function noSharedKeys(key: string): never {
  throw new Error(`no current holders given to fold ${key}, a key that had shared holders`);
}
