import type { ReplicatedExtendFrame, ReplicatedFreeFrame, ReplicatedGrantFrame } from "@lock/protocol";

export type BacklogFrame = ReplicatedGrantFrame | ReplicatedFreeFrame | ReplicatedExtendFrame;

/** One key's net change since the backlog started holding it. */
interface PendingKey {
  /** The token the standby holds for the key, as of the last frame it was sent (none: free). */
  standbyToken: bigint | undefined;
  held: boolean;
  token: bigint;
  /** Lease end on this node's clock: the remaining duration is computed when the frame is sent. */
  deadline: number;
  id: string | undefined;
  /** The holder's id is known (a grant is pending); an extension alone keeps the standby's id. */
  granted: boolean;
}

/**
 * The changes a standby has not been sent yet because it is behind, folded per key: whatever
 * happened to a key in between, the standby only needs its final state. A lock granted and freed
 * while the standby was busy costs one frame (or none of its grant), and the backlog never holds
 * more than one entry per key, however long the standby stalls.
 *
 * `drain()` stamps every frame with the sequence number of the latest change held: the standby's
 * acknowledgement of any of them says it has caught up to there once it has applied the rest, which
 * the same write carries (acknowledgements only steer flow control and lag; a handoff's `!O` follows
 * the whole drain).
 */
export class Backlog {
  readonly #keys = new Map<string, PendingKey>();
  /**
   * Drained entries, reused: a standby that stays behind would otherwise cost an allocation per key
   * per round, each living just long enough to be copied by the garbage collector.
   */
  readonly #spare: PendingKey[] = [];
  #lastSeq = 0;

  get size(): number {
    return this.#keys.size;
  }

  /** A replicated change that happened at `now` (on this node's clock). */
  add(frame: BacklogFrame, now: number): void {
    switch (frame.peer) {
      case "G":
        this.grant(frame.seq, frame.key, frame.token, now + frame.leaseMs, frame.id);
        return;
      case "F":
        this.free(frame.seq, frame.key, frame.token);
        return;
      case "X":
        this.extend(frame.seq, frame.key, frame.token, now + frame.leaseMs);
        return;
    }
  }

  grant(seq: number, key: string, token: bigint, deadline: number, id: string | undefined): void {
    const entry = this.#touch(seq, key, undefined);
    entry.held = true;
    entry.granted = true;
    entry.token = token;
    entry.deadline = deadline;
    entry.id = id;
  }

  free(seq: number, key: string, token: bigint): void {
    const entry = this.#touch(seq, key, token);
    entry.held = false;
    entry.token = token;
  }

  extend(seq: number, key: string, token: bigint, deadline: number): void {
    const entry = this.#touch(seq, key, token);
    entry.held = true;
    entry.token = token;
    entry.deadline = deadline;
  }

  /** The folded frames, one per key; the backlog is empty afterwards. */
  drain(now: number): BacklogFrame[] {
    const seq = this.#lastSeq;
    const frames: BacklogFrame[] = [];
    for (const [key, entry] of this.#keys) {
      frames.push(finalFrame(seq, key, entry, now));
      if (this.#spare.length < MAX_SPARE) this.#spare.push(entry);
    }
    this.#keys.clear();
    return frames;
  }

  clear(): void {
    this.#keys.clear();
  }

  /**
   * The key's entry. A key's first change tells what the standby holds: a free or an extension
   * names its current token, a grant means it holds nothing.
   */
  #touch(seq: number, key: string, standbyToken: bigint | undefined): PendingKey {
    this.#lastSeq = seq;
    const entry = this.#keys.get(key);
    if (entry !== undefined) return entry;
    const created = this.#spare.pop() ?? {
      standbyToken,
      held: false,
      token: 0n,
      deadline: 0,
      id: undefined,
      granted: false,
    };
    created.standbyToken = standbyToken;
    created.granted = false;
    created.id = undefined;
    this.#keys.set(key, created);
    return created;
  }
}

const MAX_SPARE = 16_384;

function finalFrame(seq: number, key: string, entry: PendingKey, now: number): BacklogFrame {
  const { token } = entry;
  // Free the token the standby holds; if it holds none for this key, the frame is a no-op there
  // but still carries the sequence number to acknowledge.
  if (!entry.held) return { peer: "F", seq, key, token: entry.standbyToken ?? token };
  const leaseMs = Math.max(0, Math.ceil(entry.deadline - now));
  if (!entry.granted) return { peer: "X", seq, key, token, leaseMs };
  return entry.id === undefined
    ? { peer: "G", seq, key, token, leaseMs }
    : { peer: "G", seq, key, token, leaseMs, id: entry.id };
}
