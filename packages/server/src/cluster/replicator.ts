import { encodePeer, type PeerFrame } from "@lock/protocol";
import type { EngineJournal } from "../engine/engine.js";
import type { PeerLink } from "./peer-link.js";

/** What the replicator needs of the engine to write a snapshot. */
export interface SnapshotSource {
  holders(): Iterable<{ key: string; token: bigint; remainingMs: number; id: string | undefined }>;
  readonly keyCount: number;
}

interface Target {
  /** Snapshot sent on this connection: deltas follow. */
  streaming: boolean;
  snapshotSeq: bigint;
  ackedSeq: bigint;
  ackedAt: number;
}

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
  #seq = 0n;
  readonly #targets = new Map<PeerLink, Target>();
  readonly #waiters = new Map<PeerLink, Array<{ seq: bigint; resolve(acked: boolean): void }>>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  get seq(): bigint {
    return this.#seq;
  }

  grant(key: string, token: bigint, leaseMs: number, id: string | undefined): void {
    if (!this.enabled) return;
    const seq = ++this.#seq;
    this.#broadcast(
      encodePeer(
        id === undefined
          ? { peer: "G", seq, key, token, leaseMs }
          : { peer: "G", seq, key, token, leaseMs, id },
      ),
    );
  }

  free(key: string, token: bigint): void {
    if (!this.enabled) return;
    this.#broadcast(encodePeer({ peer: "F", seq: ++this.#seq, key, token }));
  }

  extend(key: string, token: bigint, leaseMs: number): void {
    if (!this.enabled) return;
    this.#broadcast(encodePeer({ peer: "X", seq: ++this.#seq, key, token, leaseMs }));
  }

  /** Tells every streaming peer about a new epoch. */
  announceEpoch(epoch: bigint): void {
    this.#broadcast(encodePeer({ peer: "P", seq: ++this.#seq, epoch }));
  }

  /** Sends the whole holder table on `link`; deltas follow on it from now on. */
  sendSnapshot(link: PeerLink, source: SnapshotSource, epoch: bigint): void {
    const seq = this.#seq;
    const lines: string[] = [encodePeer({ peer: "S", epoch, seq, count: source.keyCount })];
    for (const { key, token, remainingMs, id } of source.holders()) {
      lines.push(
        encodePeer(
          id === undefined
            ? { peer: "h", key, token, remainingMs }
            : { peer: "h", key, token, remainingMs, id },
        ),
      );
      // Keep each write reasonably sized on large tables.
      if (lines.length >= 4096) link.send(lines.splice(0).join(""));
    }
    lines.push(encodePeer({ peer: "s", seq }));
    link.send(lines.join(""));
    this.#targets.set(link, { streaming: true, snapshotSeq: seq, ackedSeq: -1n, ackedAt: this.#now() });
  }

  /** Sends a handoff on `link` and resolves true once the peer acknowledges it (false on timeout). */
  handoff(link: PeerLink, epoch: bigint, timeoutMs: number): Promise<boolean> {
    const seq = ++this.#seq;
    const frame: PeerFrame = { peer: "O", seq, epoch };
    link.send(encodePeer(frame));
    link.flush();
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(false), timeoutMs);
      const settle = (acked: boolean) => {
        clearTimeout(timer);
        resolve(acked);
      };
      const list = this.#waiters.get(link) ?? [];
      list.push({ seq, resolve: settle });
      this.#waiters.set(link, list);
    });
  }

  acknowledged(link: PeerLink, seq: bigint): void {
    const target = this.#targets.get(link);
    if (target && seq > target.ackedSeq) {
      target.ackedSeq = seq;
      target.ackedAt = this.#now();
    }
    const list = this.#waiters.get(link);
    if (!list) return;
    const remaining = list.filter((waiter) => {
      if (waiter.seq > seq) return true;
      waiter.resolve(true);
      return false;
    });
    this.#waiters.set(link, remaining);
  }

  /** The link's connection closed: it needs a new snapshot, and pending handoffs fail. */
  disconnected(link: PeerLink): void {
    this.#targets.delete(link);
    for (const waiter of this.#waiters.get(link) ?? []) waiter.resolve(false);
    this.#waiters.delete(link);
  }

  /** Stop streaming to everyone (demotion); each peer gets a snapshot again if this node is active later. */
  stopAll(): void {
    this.#targets.clear();
  }

  isStreaming(link: PeerLink): boolean {
    return this.#targets.get(link)?.streaming ?? false;
  }

  /** The peer applied the snapshot sent on its current connection. */
  isSynced(link: PeerLink): boolean {
    const target = this.#targets.get(link);
    return target !== undefined && target.ackedSeq >= target.snapshotSeq;
  }

  /** Replication lag of `link`: operations not yet acknowledged, and since when. */
  lag(link: PeerLink): { ops: number; sinceAckMs: number } | undefined {
    const target = this.#targets.get(link);
    if (!target) return undefined;
    const acked = target.ackedSeq < 0n ? target.snapshotSeq : target.ackedSeq;
    return { ops: Number(this.#seq - acked), sinceAckMs: Math.round(this.#now() - target.ackedAt) };
  }

  #broadcast(line: string): void {
    for (const [link, target] of this.#targets) if (target.streaming) link.send(line);
  }
}
