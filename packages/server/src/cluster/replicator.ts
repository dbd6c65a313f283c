import type { Timer, TimerQueue } from "@lock/deadline-heap";
import {
  encodePeer,
  type LockMode,
  type PeerFrame,
  type SnapshotHolderFrame,
  type SnapshotSharedHolderFrame,
} from "@lock/protocol";
import type { EngineJournal } from "../engine/engine.js";

import { Backlog, type Change, type SnapshotHolder } from "./backlog.js";

export type { SnapshotHolder } from "./backlog.js";

/**
 * What the replicator needs of the engine to write a snapshot: its holders, read lazily over many
 * event-loop turns while the table keeps changing. Every key held throughout is visited once; a key
 * added or removed meanwhile may or may not be (its changes follow the snapshot anyway).
 */
export interface SnapshotSource {
  holders(): Iterable<SnapshotHolder>;
  /** One key's holders now: a folded catch-up sends a key that had shared holders whole. */
  keyHolders(key: string): readonly SnapshotHolder[];
}

/**
 * What the replicator needs of a link to one standby: the socket adapter (`PeerLink`) in lockd, an
 * in-memory link in tests and the simulator. Writes are ordered; `flush` sends what is batched now.
 * `queuedBytes` is what was sent but has not reached the kernel yet: a snapshot waits while it is
 * large, so a big table never piles up in memory (or past the link's buffer limit). Links are told
 * apart by identity.
 */
export interface ReplicaLink {
  send(lines: string): void;
  flush(): void;
  readonly queuedBytes: number;
  /**
   * Drops the current connection (the link redials): a snapshot cut short on it has no end the
   * peer could recognise, and the peer would hold the part it got until its next `!S`.
   */
  reset?(): void;
}

/** Holders a snapshot sends per event-loop turn at most (about 10 ms of encoding)… */
export const SNAPSHOT_CHUNK_HOLDERS = 8192;

/** …and it ends its turn sooner once it has taken this long, so requests and heartbeats keep flowing. */
export const SNAPSHOT_TURN_MS = 4;

/** A snapshot waits (it polls every millisecond) while more than this is queued on its link. */
export const SNAPSHOT_HIGH_WATER_BYTES = 1024 * 1024;

/** A snapshot being sent: the rest of the table, and how many holders went out so far. */
interface SnapshotProgress {
  readonly epoch: bigint;
  readonly holders: Iterator<SnapshotHolder>;
  sent: number;
  timer: Timer | undefined;
}

interface Target {
  readonly link: ReplicaLink;
  snapshotSeq: number;
  /** Sequence number of the last frame written to this peer. */
  sentSeq: number;
  ackedSeq: number;
  ackedAt: number;
  /**
   * The peer was a window behind, or is being sent a snapshot: its changes are held back (folded in
   * the shared backlog) until it is sent them, and live writes resume only then, so nothing older
   * can follow something newer.
   */
  folding: boolean;
  /** The snapshot still being sent on this link, if any (its changes fold meanwhile). */
  snapshot: SnapshotProgress | undefined;
  /** When it was last sent its folded changes, and the timer that sends them next. */
  drainedAt: number;
  drainTimer: Timer | undefined;
}

/**
 * Changes a standby may have unacknowledged before the active holds further ones back and folds
 * them per key (docs/consistency.md, "A standby that falls behind").
 */
export const DEFAULT_REPLICATION_WINDOW = 1024;

/**
 * Least time between two folded sends to a standby that is behind: the longer it folds, the less
 * it (and the active) has to process per change, which is how a standby that fell behind catches up.
 */
export const DEFAULT_FOLD_INTERVAL_MS = 10;

/**
 * The active's side of replication. Every change to the holder table (the engine journal) gets the
 * next sequence number and goes, in order, to every peer link that has received a snapshot on its
 * current connection. Replication is asynchronous: nothing waits for acknowledgements, except a
 * handoff, which waits for its own.
 *
 * Lease deadlines travel as durations (`leaseMs`, `remainingMs`), never as wall-clock times.
 */
export class Replicator implements EngineJournal {
  /** Off on a standby: its engine changes come from the stream, not from clients. */
  enabled = false;
  #seq = 0;
  readonly #targets = new Map<ReplicaLink, Target>();
  readonly #ackListeners = new Set<() => void>();
  readonly #waiters = new Map<ReplicaLink, Array<{ seq: number; resolve(acked: boolean): void }>>();
  /** Keys' latest states while any peer folds, shared by all of them. */
  readonly #backlog = new Backlog();
  /** The engine's table, as the last snapshot read it: folds read keys that had shared holders. */
  #source: SnapshotSource | undefined;
  readonly #currentHolders = (key: string) => this.#source?.keyHolders(key) ?? [];
  #folding = 0;
  /** The epoch last announced (`announceEpoch`): a snapshot that began before it ends with it. */
  #epoch: bigint | undefined;
  readonly #timers: TimerQueue;
  readonly #window: number;
  readonly #foldIntervalMs: number;

  /** `timers`: the node's timer queue; its clock is the engine's (folded leases use its deadlines). */
  constructor(
    timers: TimerQueue,
    window = DEFAULT_REPLICATION_WINDOW,
    foldIntervalMs = DEFAULT_FOLD_INTERVAL_MS,
  ) {
    this.#timers = timers;
    this.#window = window;
    this.#foldIntervalMs = foldIntervalMs;
  }

  get seq(): number {
    return this.#seq;
  }

  /** `deadline`: the lease's end on this node's clock (the engine has it at hand; folding uses it). */
  grant(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    deadline?: number,
    mode?: LockMode,
    slot?: number,
  ): void {
    if (!this.enabled) return;
    const seq = ++this.#seq;
    const change: Change =
      mode === undefined || mode.kind === "exclusive"
        ? { peer: "G", seq, key, token, leaseMs }
        : { peer: "Q", seq, key, token, leaseMs, mode, slot };
    this.#publish(id === undefined ? change : { ...change, id }, deadline);
  }

  free(key: string, token: bigint, _cause?: "release" | "expiry", shared?: boolean): void {
    if (!this.enabled) return;
    const seq = ++this.#seq;
    this.#publish(
      shared ? { peer: "F", seq, key, token, shared } : { peer: "F", seq, key, token },
      undefined,
    );
  }

  extend(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    deadline?: number,
    shared?: boolean,
  ): void {
    if (!this.enabled) return;
    const seq = ++this.#seq;
    this.#publish(
      shared
        ? { peer: "X", seq, key, token, leaseMs, id, shared }
        : { peer: "X", seq, key, token, leaseMs, id },
      deadline,
    );
  }

  /** Tells every streaming peer about a new epoch (after whatever it has been held back). */
  announceEpoch(epoch: bigint): void {
    this.#epoch = epoch;
    const seq = ++this.#seq;
    const line = encodePeer({ peer: "P", seq, epoch });
    for (const [link, target] of this.#targets) {
      // Nothing but `!h` (and heartbeats) inside a snapshot: its end announces the epoch instead.
      if (target.snapshot) continue;
      this.#drain(link, target);
      this.#write(link, target, seq, line);
    }
  }

  /**
   * Sends the whole holder table on `link`, a chunk per event-loop turn (and only while the link is
   * not backed up), so a table of millions neither blocks this node nor piles up unsent: the node
   * keeps serving meanwhile. Changes made during the snapshot are folded per key (as for a standby
   * that fell behind) and follow its end, so the peer ends with the table as it is then, whatever
   * the snapshot read before or after each change. Deltas follow live from then on.
   */
  sendSnapshot(link: ReplicaLink, source: SnapshotSource, epoch: bigint): void {
    this.#source = source;
    const seq = this.#seq;
    const previous = this.#targets.get(link);
    if (previous) this.#forget(previous);
    const target: Target = {
      link,
      snapshotSeq: seq,
      sentSeq: seq,
      ackedSeq: -1,
      ackedAt: this.#timers.clock.now(),
      folding: false,
      drainedAt: Number.NEGATIVE_INFINITY,
      drainTimer: undefined,
      snapshot: { epoch, holders: source.holders()[Symbol.iterator](), sent: 0, timer: undefined },
    };
    this.#targets.set(link, target);
    this.#startFolding(target);
    link.send(encodePeer({ peer: "S", epoch, seq }));
    this.#continueSnapshot(target);
  }

  /** Whether `link` is still being sent a snapshot. */
  isSendingSnapshot(link: ReplicaLink): boolean {
    return this.#targets.get(link)?.snapshot !== undefined;
  }

  /** Sends the next chunk of `target`'s snapshot, or its end; schedules the chunk after. */
  #continueSnapshot(target: Target): void {
    const snapshot = target.snapshot!;
    snapshot.timer = undefined;
    if (this.#targets.get(target.link) !== target) return;
    if (target.link.queuedBytes > SNAPSHOT_HIGH_WATER_BYTES) {
      snapshot.timer = this.#timers.after(1, () => this.#continueSnapshot(target));
      return;
    }
    let text = "";
    const clock = this.#timers.clock;
    const turnEnds = clock.now() + SNAPSHOT_TURN_MS;
    for (let i = 0; i < SNAPSHOT_CHUNK_HOLDERS; i++) {
      if (i % 256 === 255 && clock.now() >= turnEnds) break;
      const next = snapshot.holders.next();
      if (next.done) {
        target.link.send(text);
        this.#endSnapshot(target);
        return;
      }
      text += encodePeer(holderFrame(next.value));
      snapshot.sent += 1;
    }
    target.link.send(text);
    snapshot.timer = this.#timers.after(0, () => this.#continueSnapshot(target));
  }

  /** `!s`, then every change made since the snapshot began (folded), then an epoch taken meanwhile. */
  #endSnapshot(target: Target): void {
    const snapshot = target.snapshot!;
    target.snapshot = undefined;
    target.link.send(encodePeer({ peer: "s", seq: target.snapshotSeq, count: snapshot.sent }));
    this.#drain(target.link, target);
    if (this.#epoch !== undefined && this.#epoch !== snapshot.epoch)
      this.#write(
        target.link,
        target,
        ++this.#seq,
        encodePeer({ peer: "P", seq: this.#seq, epoch: this.#epoch }),
      );
  }

  /**
   * Sends a handoff on `link`, then calls `done(true)` once the peer acknowledges it, or
   * `done(false)` on timeout or disconnect: once, from the acknowledgement's or the timer's event
   * (or at once, for a peer still being sent a snapshot), never later from a promise.
   */
  handoff(link: ReplicaLink, epoch: bigint, timeoutMs: number, done: (acked: boolean) => void): void {
    const target = this.#targets.get(link);
    // A peer still being sent a snapshot, or not sent one on this connection, is no successor. The
    // caller checked it was synced, but a handoff that first gives the ownership lease back checks
    // after a store round trip, during which the link may have been reset.
    if (!target || target.snapshot) {
      done(false);
      return;
    }
    const seq = ++this.#seq;
    const frame: PeerFrame = { peer: "O", seq, epoch };
    // The successor must have every change before it takes over.
    if (target) this.#drain(link, target);
    link.send(encodePeer(frame));
    link.flush();
    let settled = false;
    const settle = (acked: boolean) => {
      if (settled) return;
      settled = true;
      timer.cancel();
      done(acked);
    };
    const timer = this.#timers.after(timeoutMs, () => settle(false));
    const list = this.#waiters.get(link) ?? [];
    list.push({ seq, resolve: settle });
    this.#waiters.set(link, list);
  }

  /** Calls `then` at the next acknowledgement from any peer (after it is recorded), or after `timeoutMs`. */
  nextAck(timeoutMs: number, then: () => void): void {
    const listeners = this.#ackListeners;
    const done = () => {
      timer.cancel();
      listeners.delete(done);
      then();
    };
    const timer = this.#timers.after(timeoutMs, done);
    listeners.add(done);
  }

  acknowledged(link: ReplicaLink, seq: number): void {
    const target = this.#targets.get(link);
    if (target && seq > target.ackedSeq) {
      target.ackedSeq = seq;
      target.ackedAt = this.#timers.clock.now();
      // Caught up enough: send what was held back, folded.
      if (target.folding && !this.#behind(target)) this.#scheduleDrain(link, target);
    }
    // Every acknowledgement of every standby comes here: nothing is allocated unless someone waits.
    const list = this.#waiters.get(link);
    if (this.#ackListeners.size === 0 && (list === undefined || list.length === 0)) return;
    const acked = list?.filter((waiter) => waiter.seq <= seq) ?? [];
    if (acked.length > 0)
      this.#waiters.set(
        link,
        list!.filter((waiter) => waiter.seq > seq),
      );
    // Everything is recorded before anyone waiting hears of it: a handoff that completes here may
    // change the replicator (a demotion stops every stream).
    for (const listener of [...this.#ackListeners]) listener();
    for (const waiter of acked) waiter.resolve(true);
  }

  /** The link's connection closed: it needs a new snapshot, and pending handoffs fail. */
  disconnected(link: ReplicaLink): void {
    const target = this.#targets.get(link);
    if (target) this.#forget(target);
    this.#targets.delete(link);
    const waiting = this.#waiters.get(link) ?? [];
    this.#waiters.delete(link);
    for (const waiter of waiting) waiter.resolve(false);
  }

  /** Stop streaming to everyone (demotion); each peer gets a snapshot again if this node is active later. */
  stopAll(): void {
    for (const target of this.#targets.values()) this.#abandon(target);
    this.#targets.clear();
  }

  /**
   * Stop streaming to `link` on its current connection (its peer needs a fresh snapshot): it gets
   * one from the next tick on, on a new connection if one was still being sent.
   */
  restart(link: ReplicaLink): void {
    const cutShort = this.isSendingSnapshot(link);
    this.disconnected(link);
    if (cutShort) link.reset?.();
  }

  /**
   * Forgets `target` while its connection is up. A snapshot it was still being sent has no end: its
   * peer would keep the holders it got (memory: a million holders for a million sent) and refuse
   * the next snapshot on that connection as "!S inside a snapshot", so the connection goes
   * (issue 20: a brief false promotion left such a snapshot behind on a standby for minutes).
   */
  #abandon(target: Target): void {
    const cutShort = target.snapshot !== undefined;
    this.#forget(target);
    if (cutShort) target.link.reset?.();
  }

  isStreaming(link: ReplicaLink): boolean {
    return this.#targets.has(link);
  }

  /** The peer applied the snapshot sent on its current connection. */
  isSynced(link: ReplicaLink): boolean {
    const target = this.#targets.get(link);
    return target !== undefined && target.ackedSeq >= target.snapshotSeq;
  }

  /** Replication lag of `link`: operations not yet acknowledged, and since when. */
  lag(link: ReplicaLink): { ops: number; sinceAckMs: number } | undefined {
    const target = this.#targets.get(link);
    if (!target) return undefined;
    const acked = target.ackedSeq < 0 ? target.snapshotSeq : target.ackedSeq;
    return { ops: this.#seq - acked, sinceAckMs: Math.round(this.#timers.clock.now() - target.ackedAt) };
  }

  /** One change to every streaming peer: written (encoded once), or folded for those that are behind. */
  #publish(change: Change, deadline: number | undefined): void {
    let line: string | undefined;
    for (const target of this.#targets.values()) {
      if (!target.folding && this.#behind(target)) this.#startFolding(target);
      if (target.folding) continue;
      line ??= encodePeer(change.peer === "X" ? withoutId(change) : change);
      this.#write(target.link, target, change.seq, line);
    }
    if (this.#folding === 0) return;
    // Frees carry no lease; grants and extensions normally come with their end from the engine.
    const end = change.peer === "F" ? 0 : (deadline ?? this.#timers.clock.now() + change.leaseMs);
    this.#backlog.record(change, end);
  }

  #behind(target: Target): boolean {
    const acked = target.ackedSeq < 0 ? target.snapshotSeq : target.ackedSeq;
    return target.sentSeq - acked >= this.#window;
  }

  #startFolding(target: Target): void {
    target.folding = true;
    this.#folding += 1;
  }

  #write(link: ReplicaLink, target: Target, seq: number, line: string): void {
    link.send(line);
    target.sentSeq = seq;
  }

  /** Sends the folded changes now, or when the fold interval since the last send is over. */
  #scheduleDrain(link: ReplicaLink, target: Target): void {
    if (target.drainTimer || target.snapshot) return;
    const wait = target.drainedAt + this.#foldIntervalMs - this.#timers.clock.now();
    if (wait <= 0) {
      this.#drain(link, target);
      return;
    }
    target.drainTimer = this.#timers.after(wait, () => {
      target.drainTimer = undefined;
      if (this.#targets.get(link) === target) this.#drain(link, target);
    });
  }

  /** The target leaves (disconnect, new snapshot, demotion): no timer, and it no longer folds. */
  #forget(target: Target): void {
    cancelDrainTimer(target);
    target.snapshot?.timer?.cancel();
    target.snapshot = undefined;
    this.#stopFolding(target);
  }

  #stopFolding(target: Target): void {
    if (!target.folding) return;
    target.folding = false;
    this.#folding -= 1;
    this.#pruneBacklog();
  }

  /** Sends `target` the state of every key changed since it was last sent anything. */
  #drain(link: ReplicaLink, target: Target): void {
    cancelDrainTimer(target);
    if (!target.folding || target.snapshot) return;
    const now = this.#timers.clock.now();
    let text = "";
    for (const frame of this.#backlog.changedSince(target.sentSeq, now, this.#currentHolders))
      text += encodePeer(frame);
    if (text !== "") {
      link.send(text);
      target.drainedAt = now;
    }
    // Never backwards: a `!P` written live after the last change has a higher seq than any folded one.
    target.sentSeq = Math.max(target.sentSeq, this.#backlog.lastSeq);
    // Still a window behind: keep folding (the usual case right after a large send).
    if (!this.#behind(target)) this.#stopFolding(target);
    else this.#pruneBacklog();
  }

  /** Drops what every folding peer has been sent; everything once no peer folds. */
  #pruneBacklog(): void {
    if (this.#folding === 0) {
      this.#backlog.clear();
      return;
    }
    let upTo = Number.POSITIVE_INFINITY;
    for (const target of this.#targets.values()) if (target.folding) upTo = Math.min(upTo, target.sentSeq);
    this.#backlog.prune(upTo);
  }
}

function cancelDrainTimer(target: Target): void {
  target.drainTimer?.cancel();
  target.drainTimer = undefined;
}

function withoutId(change: Change & { peer: "X" }) {
  return {
    peer: "X" as const,
    seq: change.seq,
    key: change.key,
    token: change.token,
    leaseMs: change.leaseMs,
  };
}

/** A snapshot's frame for one holder: `!h` for an exclusive one, `!q` for a shared holder or permit. */
function holderFrame(holder: SnapshotHolder): SnapshotHolderFrame | SnapshotSharedHolderFrame {
  const { key, token, remainingMs, id, mode, slot } = holder;
  const frame: SnapshotHolderFrame | SnapshotSharedHolderFrame =
    mode === undefined || mode.kind === "exclusive"
      ? { peer: "h", key, token, remainingMs }
      : { peer: "q", key, token, remainingMs, mode, slot: slot === undefined || slot < 0 ? undefined : slot };
  return id === undefined ? frame : { ...frame, id };
}
