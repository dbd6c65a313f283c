import type { ReplicatedFreeFrame, ReplicatedGrantFrame } from "@lock/protocol";

/** A change as the replicator publishes it; an extension carries the holder's id for folding. */
export type Change =
  | ReplicatedGrantFrame
  | ReplicatedFreeFrame
  | {
      readonly peer: "X";
      readonly seq: number;
      readonly key: string;
      readonly token: bigint;
      readonly leaseMs: number;
      readonly id: string | undefined;
    };

/** What a standby that was behind is sent for a key: its final state. */
export type FoldedFrame = ReplicatedGrantFrame | ReplicatedFreeFrame;

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
}

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
      };
      state.firstSeq = seq;
      state.heldBefore = change.peer !== "G";
      this.#keys.set(key, state);
    }
    state.seq = seq;
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
  changedSince(since: number, now: number): FoldedFrame[] {
    const seq = this.#lastSeq;
    const frames: FoldedFrame[] = [];
    let skippedKey: string | undefined;
    let skippedToken = 0n;
    for (const [key, state] of this.#keys) {
      if (state.seq <= since) continue;
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
    return frames;
  }

  /** Forgets keys whose latest change is at or before `upTo`: every standby has been sent them. */
  prune(upTo: number): void {
    for (const [key, state] of this.#keys) {
      if (state.seq > upTo) continue;
      this.#keys.delete(key);
      if (this.#spare.length < MAX_SPARE) {
        state.id = undefined;
        this.#spare.push(state);
      }
    }
  }

  clear(): void {
    this.#keys.clear();
  }
}

const MAX_SPARE = 16_384;
