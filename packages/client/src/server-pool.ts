import { jittered, type Random } from "./jitter.js";

/**
 * The connection slots of a client and the policy that rotates and reconnects them, as a pure unit:
 * no sockets and no timers; time comes in as arguments. The socket adapter reports what happened
 * (`connecting`, `ready`, `down`, …) and asks what to do (`pick`, `dueForConnect`, `nextConnectAt`).
 *
 * Policy (the seed's "How clients behave"):
 * - one slot per configured address, two when a single address is configured, so that requests keep
 *   flowing while one of the two reconnects;
 * - requests go round-robin over the `ready` slots; a slot that is not ready is skipped;
 * - a slot that went down is connected again `reconnectIntervalMs` after it went down, and again
 *   every `reconnectIntervalMs` for as long as attempts fail, each time plus a random part of
 *   `reconnectJitterMs` (see jitter.ts), so that the clients of a restarted node do not all
 *   reconnect at the same moment, and again together 3 s later;
 * - a node that redirected us (a standby) is only used while no other node is ready, so requests go
 *   straight to the active once it is known; connecting again forgets the mark;
 * - a redirect to an address not configured adds a slot for it; a redirect to an address whose slot
 *   is down connects it at once rather than at its next interval: the redirect is news that the node
 *   is up (the node that took the active role back, say), not a guess. At most once per
 *   `hintIntervalMs` per slot, so that standbys still pointing at a dead active during a failover
 *   cost a refused connect now and then, not one per redirected request; likewise when a request
 *   finds no slot ready or connecting (`wanted`): it waits for an attempt instead of failing unseen;
 * - a connection that owes replies and has been silent for the answer timeout (a stopped process
 *   closes nothing; see SilenceWatch) is avoided like a standby, and the other nodes are probed
 *   (`I`) until one of them says it is the active or the silent one speaks again: every
 *   `answerTimeoutMs / 5` during the first `4 × answerTimeoutMs` of the silence (when a standby's
 *   promotion is expected: lockd's peer timeout plus a promotion), then every `answerTimeoutMs`;
 * - when another node says it is the active, the silent slots are dropped (their requests move on)
 *   and stay avoided, even after they reconnect, until they answer a request themselves
 *   (`distrusted`): the old active may still be stopped behind a socket that accepts. Likewise a
 *   connection that opened and closed without receiving a byte (a proxy in front of a node it
 *   cannot reach accepts, then resets): requests go there only when a redirect names it.
 */
export type SlotState = "idle" | "connecting" | "ready" | "draining";

export interface PoolSlot {
  /** Stable identity for events and logs: the slot's position in the pool. */
  readonly index: number;
  readonly address: string;
  state: SlotState;
  /** Monotonic ms at which an `idle` slot should be connected. */
  nextConnectAt: number;
  /** Connect attempts since the slot was last ready (0 while ready). */
  failedAttempts: number;
  /** It answered a request with a redirect: prefer other nodes. */
  standby: boolean;
  /** Whether it has ever been ready (its next connect is a reconnect). */
  everReady: boolean;
  /** Monotonic ms at which its latest connect attempt started (-Infinity before the first). */
  lastAttemptAt: number;
  /** Monotonic ms since which it owes replies in silence; NaN while it answers. */
  silentSince: number;
  /**
   * Prefer other nodes until it answers a request itself: another node claimed the active role while
   * this one was silent, or its connection reset requests without ever answering one.
   */
  distrusted: boolean;
  lastError: Error | undefined;
}

export interface ServerPoolOptions {
  /** Background reconnects of a slot that went down: this long after, and again while they fail. */
  readonly reconnectIntervalMs: number;
  /** Up to this much more, at random, on each background reconnect. Default 0. */
  readonly reconnectJitterMs?: number;
  /** The random source for the jitter. Default `Math.random`. */
  readonly random?: Random;
  /** The least time between two connect attempts of one slot brought forward by redirects. */
  readonly hintIntervalMs: number;
  /** How long a connection may owe replies in silence before the others are probed. */
  readonly answerTimeoutMs: number;
}

/** How many answer timeouts of silence get the fast probes (a standby promotes within them). */
const FAST_PROBE_TIMEOUTS = 4;
/** Fast probes per answer timeout. */
const FAST_PROBES_PER_TIMEOUT = 5;

export class ServerPool {
  readonly #slots: PoolSlot[] = [];
  readonly #reconnectIntervalMs: number;
  readonly #reconnectJitterMs: number;
  readonly #random: Random;
  readonly #hintIntervalMs: number;
  readonly #answerTimeoutMs: number;
  #cursor = 0;
  #nextProbeAt: number | undefined;
  #lastError: Error | undefined;

  /** Every slot is `idle` and due at once, so the first `dueForConnect` connects them all. */
  constructor(addresses: readonly string[], options: ServerPoolOptions) {
    if (addresses.length === 0) throw new RangeError("at least one server address is required");
    this.#reconnectIntervalMs = options.reconnectIntervalMs;
    this.#reconnectJitterMs = options.reconnectJitterMs ?? 0;
    this.#random = options.random ?? Math.random;
    this.#hintIntervalMs = options.hintIntervalMs;
    this.#answerTimeoutMs = options.answerTimeoutMs;
    const perAddress = addresses.length === 1 ? 2 : 1;
    for (const address of addresses) for (let i = 0; i < perAddress; i++) this.#add(address);
  }

  get slots(): readonly PoolSlot[] {
    return this.#slots;
  }

  /** Registered connections: how many an acquire tries before it reports that none is usable. */
  get size(): number {
    return this.#slots.length;
  }

  get readyCount(): number {
    let ready = 0;
    for (const slot of this.#slots) if (slot.state === "ready") ready++;
    return ready;
  }

  connecting(slot: PoolSlot, nowMs: number): void {
    slot.state = "connecting";
    slot.standby = false;
    slot.lastAttemptAt = nowMs;
  }

  ready(slot: PoolSlot): void {
    slot.state = "ready";
    slot.failedAttempts = 0;
    slot.everReady = true;
    slot.lastError = undefined;
  }

  /**
   * The slot's connection closed or failed to open: it is excluded until its next attempt, which is
   * `reconnectIntervalMs` plus a random part of `reconnectJitterMs` from now. Returns that delay.
   */
  down(slot: PoolSlot, nowMs: number, error?: Error): number {
    if (slot.state === "connecting") slot.failedAttempts += 1;
    slot.state = "idle";
    slot.silentSince = Number.NaN;
    const delay = jittered(this.#reconnectIntervalMs, this.#reconnectJitterMs, this.#random);
    slot.nextConnectAt = nowMs + delay;
    slot.lastError = error ?? slot.lastError;
    this.#lastError = error ?? this.#lastError;
    return delay;
  }

  /** The node is shutting down (`SHUTTING_DOWN`): no new requests until its connection closes. */
  draining(slot: PoolSlot): void {
    if (slot.state === "ready") slot.state = "draining";
  }

  /** The node at `address` redirected a request: it is a standby. */
  standby(address: string): void {
    for (const slot of this.#slots) if (slot.address === address) slot.standby = true;
  }

  /** The node answered a request itself: whatever it was before, it serves now. */
  serving(slot: PoolSlot): void {
    slot.standby = false;
    slot.distrusted = false;
  }

  /** Prefer other nodes until this one answers a request itself (see `distrusted`). */
  distrust(slot: PoolSlot): void {
    slot.distrusted = true;
  }

  /** The slot owes replies and has been silent for the answer timeout: look for another active. */
  silent(slot: PoolSlot, nowMs: number): void {
    if (slot.state !== "ready" || !Number.isNaN(slot.silentSince)) return;
    slot.silentSince = nowMs;
    this.#nextProbeAt ??= nowMs;
  }

  /** Bytes arrived on a slot reported silent: it runs after all. */
  spoke(slot: PoolSlot): void {
    slot.silentSince = Number.NaN;
  }

  /**
   * The slots to send a probe (`I`) now, one ready slot per address that has no silent slot, when
   * a probe round is due (empty otherwise). Idle slots of those addresses are due for a connect at
   * once, as for a redirect (`ensure`): the silence is news that the active may have moved.
   */
  probeTargets(nowMs: number): PoolSlot[] {
    const next = this.#nextProbeAt;
    if (next === undefined || next > nowMs) return [];
    const silentSince = this.#earliestSilence();
    if (silentSince === undefined) {
      this.#nextProbeAt = undefined;
      return [];
    }
    const fast = nowMs - silentSince < FAST_PROBE_TIMEOUTS * this.#answerTimeoutMs;
    const interval = fast ? this.#answerTimeoutMs / FAST_PROBES_PER_TIMEOUT : this.#answerTimeoutMs;
    this.#nextProbeAt = nowMs + Math.max(1, interval);
    const silentAddresses = new Set<string>();
    for (const slot of this.#slots) if (!Number.isNaN(slot.silentSince)) silentAddresses.add(slot.address);
    const targets = new Map<string, PoolSlot>();
    for (const slot of this.#slots) {
      if (silentAddresses.has(slot.address)) continue;
      if (slot.state === "ready") {
        if (!targets.has(slot.address)) targets.set(slot.address, slot);
      } else if (slot.state === "idle") {
        this.ensure(slot.address, nowMs);
      }
    }
    return [...targets.values()];
  }

  /** When the next probe round is due; undefined while no slot is silent. */
  nextProbeAt(): number | undefined {
    if (this.#earliestSilence() === undefined) this.#nextProbeAt = undefined;
    return this.#nextProbeAt;
  }

  /**
   * The node behind `slot` says it is the active. Returns the silent slots of other addresses,
   * now distrusted: the caller drops their connections so that what they carry moves on.
   */
  claimsActive(slot: PoolSlot): PoolSlot[] {
    const dropped = this.#slots.filter(
      (other) => other.address !== slot.address && !Number.isNaN(other.silentSince),
    );
    // Nothing silent any more (it spoke meanwhile): two nodes that answer and both claim the role
    // are a partition's two actives, and the client keeps to the one it used.
    if (dropped.length === 0) return dropped;
    for (const other of dropped) other.distrusted = true;
    slot.standby = false;
    slot.distrusted = false;
    return dropped;
  }

  /** `idle` slots whose connect time has come. */
  dueForConnect(nowMs: number): PoolSlot[] {
    return this.#slots.filter((slot) => slot.state === "idle" && slot.nextConnectAt <= nowMs);
  }

  /** The earliest time an `idle` slot is due; undefined when none is idle. */
  nextConnectAt(): number | undefined {
    let next: number | undefined;
    for (const slot of this.#slots) {
      if (slot.state === "idle" && (next === undefined || slot.nextConnectAt < next))
        next = slot.nextConnectAt;
    }
    return next;
  }

  /**
   * The next ready slot in round-robin order (of `address` only, if given), preferring nodes not
   * known as standbys, and standbys to nodes that are silent or distrusted (a standby at least
   * answers, and may have promoted since it redirected us); undefined if no slot is ready.
   */
  pick(address?: string): PoolSlot | undefined {
    const count = this.#slots.length;
    let best: PoolSlot | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    for (let step = 0; step < count; step++) {
      const slot = this.#slots[(this.#cursor + step) % count]!;
      if (slot.state !== "ready" || (address !== undefined && slot.address !== address)) continue;
      const rank = slot.distrusted || !Number.isNaN(slot.silentSince) ? 2 : slot.standby ? 1 : 0;
      if (rank < bestRank) {
        best = slot;
        bestRank = rank;
        if (rank === 0) break;
      }
    }
    if (best !== undefined) this.#cursor = (best.index + 1) % count;
    return best;
  }

  /** True if some slot (of `address`, if given) is connecting: a request can wait for it. */
  isConnecting(address?: string): boolean {
    return this.#slots.some(
      (slot) => slot.state === "connecting" && (address === undefined || slot.address === address),
    );
  }

  /**
   * A redirect named `address`: its slots, adding one (idle, due now) if there is none (a redirect
   * may name an active that is not in the configured list). An idle slot for it is due now, or
   * `hintIntervalMs` after its latest attempt if that is later, instead of at its background time.
   */
  ensure(address: string, nowMs: number): PoolSlot[] {
    const existing = this.#slots.filter((slot) => slot.address === address);
    for (const slot of existing) this.#bringForward(slot, nowMs);
    if (existing.length > 0) return existing;
    const slot = this.#add(address);
    slot.nextConnectAt = nowMs;
    return [slot];
  }

  /**
   * A request found no slot ready and none connecting: every idle slot is due now (or
   * `hintIntervalMs` after its latest attempt), so that the request waits for a connect attempt
   * rather than failing without one, after a restart of every node, say.
   */
  wanted(nowMs: number): void {
    for (const slot of this.#slots) this.#bringForward(slot, nowMs);
  }

  /** The most recent connection error of any slot, to explain why none is usable. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  #bringForward(slot: PoolSlot, nowMs: number): void {
    if (slot.state !== "idle") return;
    const hinted = Math.max(nowMs, slot.lastAttemptAt + this.#hintIntervalMs);
    slot.nextConnectAt = Math.min(slot.nextConnectAt, hinted);
  }

  #earliestSilence(): number | undefined {
    let earliest: number | undefined;
    for (const slot of this.#slots) {
      if (!Number.isNaN(slot.silentSince) && (earliest === undefined || slot.silentSince < earliest))
        earliest = slot.silentSince;
    }
    return earliest;
  }

  #add(address: string): PoolSlot {
    const slot: PoolSlot = {
      index: this.#slots.length,
      address,
      state: "idle",
      nextConnectAt: Number.NEGATIVE_INFINITY,
      failedAttempts: 0,
      standby: false,
      everReady: false,
      lastAttemptAt: Number.NEGATIVE_INFINITY,
      silentSince: Number.NaN,
      distrusted: false,
      lastError: undefined,
    };
    this.#slots.push(slot);
    return slot;
  }
}
