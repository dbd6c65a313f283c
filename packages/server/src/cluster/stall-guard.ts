import type { Membership } from "./membership.js";

/** A heartbeat tick more than this many intervals after the previous one ran late (`check`). */
const LATE_TICK_INTERVALS = 2;

/**
 * Notices that this process did not run for longer than the peer timeout (SIGSTOP, a VM pause, a
 * long GC): heartbeat ticks are then further apart than the timeout allows, and a standby may have
 * promoted meanwhile. Pure: time comes in as arguments.
 */
export class StallGuard {
  readonly #membership: Membership;
  #lastTickAt: number | undefined;
  #detectedAt = 0;

  constructor(membership: Membership) {
    this.#membership = membership;
  }

  /** A heartbeat tick ran at `now`. */
  ticked(now: number): void {
    this.#lastTickAt = now;
  }

  /**
   * The gap since the last tick if it shows a stall (and the membership starts listening again),
   * else undefined. Checked by the tick and before any client byte or lease deadline is handled,
   * since after a SIGCONT the event loop runs I/O before timers.
   */
  check(now: number): number | undefined {
    const last = this.#lastTickAt;
    if (last === undefined) return undefined;
    const gapMs = now - last;
    const { heartbeatMs, peerTimeoutMs } = this.#membership.timing;
    // A tick this late (more than a heartbeat interval late) means this process ran nothing else for
    // most of the gap, its sockets unread: what it knows of its peers dates from the previous tick.
    this.#membership.readUpTo(gapMs > LATE_TICK_INTERVALS * heartbeatMs ? last : now);
    if (gapMs <= peerTimeoutMs) return undefined;
    this.#lastTickAt = now;
    this.#detectedAt = now;
    this.#membership.resumedAfterStall();
    return gapMs;
  }

  /**
   * Still the active after a stall: every peer has been heard again since (heartbeats sent after
   * this node resumed, not the ones that waited in its sockets) and none is a higher-priority
   * active (`decide` demoted this node otherwise); or one peer timeout of listening has passed, so a
   * peer still silent is dead. Epochs heard meanwhile already moved this node above them.
   */
  confirmed(): boolean {
    const membership = this.#membership;
    if (!membership.listening) return true;
    const fresh = this.#detectedAt + membership.timing.heartbeatMs;
    return membership.peers.every(
      (peer) => peer.index === membership.self || (peer.lastHeardAt ?? -1) >= fresh,
    );
  }
}
