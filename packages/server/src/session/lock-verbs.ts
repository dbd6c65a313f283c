import {
  type ErrorCode,
  EXCLUSIVE,
  type LockMode,
  type Reply,
  type Request,
  type RequestOp,
} from "@lock/protocol";
import type { Rejected } from "../engine/engine-types.js";
import type { Session } from "../engine/records.js";
import type { ServerLimits } from "../limits.js";
import type { AcquireSink, LockNode } from "../node.js";
import type { SlotGate } from "../slots/slot-gate.js";
import { crossSlotKey } from "./bundle-checks.js";
import { WatchVerbs } from "./watch-verbs.js";

/** What the lock verbs of every connection share: the node, the limits, the facts `I` reports. */
export interface VerbContext {
  readonly node: LockNode;
  readonly limits: ServerLimits;
  readonly version: string;
  /** With a slot map (several clusters over one key space): which keys this cluster serves. */
  readonly slots?: SlotGate;
  connectionCount(): number;
}

/** The lock verbs a connection runs once it may (authenticated, not a peer link). */
export type LockRequest = Exclude<Request, { op: "H" }>;
type VerbRequest<Op extends LockRequest["op"]> = Extract<LockRequest, { op: Op }>;

/**
 * One client session's lock verbs (`A Y R X C P I`), without a socket: requests in, replies out
 * through `send`, in order; queued acquires are answered later through `AcquireSink`, in any order
 * relative to other replies. The net layer's ClientConnection wraps it around a socket; the cluster
 * simulator drives it directly.
 *
 * Counts the session's queued acquires (`pending`), bounded by `maxPendingPerConnection`, and
 * keeps its grants (the engine counts them on the session) plus queued acquires within
 * `maxKeysPerConnection`.
 */
export class LockVerbs implements AcquireSink {
  readonly #ctx: VerbContext;
  readonly #session: Session<AcquireSink>;
  readonly #send: (reply: Reply) => void;
  #pending = 0;
  /** Ids of this session's queued `Q` acquires, answered `Q` (with a slot) rather than `A`. */
  #modeIds: Set<string> | undefined = undefined;
  /** This session's watches (`O`, `U`). */
  readonly #watchVerbs: WatchVerbs;
  /** This session's queued bundles (`B`): id to the request's first key, which every reply names. */
  #bundleKeys: Map<string, string> | undefined = undefined;

  /** `label`: who the session is (the client's address), shown as a key's holder by `/locks`. */
  constructor(ctx: VerbContext, send: (reply: Reply) => void, label?: string) {
    this.#ctx = ctx;
    this.#send = send;
    this.#session = ctx.node.openSession(label);
    this.#watchVerbs = new WatchVerbs(ctx.node.watches, send, (op, key, id, code, message) =>
      this.error(op, key, id, code, message),
    );
  }

  /** Queued acquires of this session. */
  get pending(): number {
    return this.#pending;
  }

  granted(key: string, token: bigint, id: string | undefined, slot: number | undefined): void {
    this.#pending -= 1;
    const bundleKey = id === undefined ? undefined : this.#bundleKeys?.get(id);
    if (bundleKey !== undefined) {
      this.#bundleKeys!.delete(id!);
      this.#send({ kind: "B", key: bundleKey, token, id: id! });
    } else if (id !== undefined && this.#modeIds?.delete(id)) this.#send({ kind: "Q", key, token, slot, id });
    else this.#send({ kind: "A", key, token, id });
  }

  timedOut(key: string, id: string | undefined): void {
    this.#pending -= 1;
    const requestKey = this.#requestKey(key, id);
    this.#forgetId(id);
    this.#send({ kind: "T", key: requestKey, id });
  }

  refused(key: string, id: string | undefined, code: ErrorCode, message: string): void {
    this.#pending -= 1;
    const op = this.#acquireOp(id);
    const requestKey = this.#requestKey(key, id);
    this.#forgetId(id);
    this.error(op, requestKey, id, code, message);
  }

  /** A retry of one of our queued acquires (same id) took its place on another session. */
  displaced(id: string | undefined): void {
    this.#pending -= 1;
    this.#forgetId(id);
  }

  /** The key a reply to the queued acquire `id` names: a bundle's first key as it was sent. */
  #requestKey(key: string, id: string | undefined): string {
    return (id === undefined ? undefined : this.#bundleKeys?.get(id)) ?? key;
  }

  #forgetId(id: string | undefined): void {
    if (id === undefined) return;
    this.#modeIds?.delete(id);
    this.#bundleKeys?.delete(id);
  }

  /** Answers every queued acquire with `code` (the client retries elsewhere) and ends the session. */
  failPending(code: ErrorCode, message: string): void {
    for (const { key, id } of this.#ctx.node.sessionWaiters(this.#session)) {
      this.#send({ kind: "E", op: this.#acquireOp(id), key: this.#requestKey(key, id), id, code, message });
    }
    this.close();
  }

  /**
   * Answers every queued acquire with a redirect to `address` and drops it (role change); with no
   * address (a lost ownership lease, no successor known yet), with `NO_ACTIVE`.
   */
  redirectPending(address: string | undefined): void {
    for (const waiter of this.#ctx.node.sessionWaiters(this.#session)) {
      const { id } = waiter;
      const op = this.#acquireOp(id);
      const key = this.#requestKey(waiter.key, id);
      if (address === undefined)
        this.error(op, key, id, "NO_ACTIVE", "this node stopped being the active; retry shortly");
      else this.#send({ kind: "M", op, key, address, id });
    }
    this.#watchVerbs.moved(address);
    this.close();
  }

  /** The session is over: its queued acquires are withdrawn, its holders keep their leases. */
  close(): void {
    this.#ctx.node.closeSession(this.#session);
    this.#watchVerbs.close();
    this.#pending = 0;
    this.#modeIds = undefined;
    this.#bundleKeys = undefined;
  }

  /** The verb a queued acquire came with. */
  #acquireOp(id: string | undefined): "A" | "Q" | "B" {
    if (id === undefined) return "A";
    return this.#modeIds?.has(id) ? "Q" : this.#bundleKeys?.has(id) ? "B" : "A";
  }

  /** Sends an error reply, counted by the observer like every `E`. */
  error(op: RequestOp | "?", key: string, id: string | undefined, code: ErrorCode, message: string): void {
    this.#ctx.node.observer.error(code);
    this.#send({ kind: "E", op, key, id, code, message });
  }

  run(request: LockRequest): void {
    const node = this.#ctx.node;
    if (request.op === "K") {
      // Any node answers: a client learns the map from whichever node it reaches first.
      this.#send({ kind: "K", map: this.#ctx.slots?.map });
      return;
    }
    // Another cluster's key is redirected there by any node of this one, standbys included.
    const keyed = request.op === "B" ? { op: "B" as const, key: request.keys[0]!, id: request.id } : request;
    if (this.#ctx.slots && "key" in keyed) {
      if (request.op === "B" && !this.#sameSlot(request)) return;
      const verdict = this.#ctx.slots.check(keyed, node.serving);
      if (verdict?.kind === "redirect") {
        this.#send(verdict.reply);
        return;
      }
      if (verdict?.kind === "refuse") {
        this.error(keyed.op, keyed.key, "id" in keyed ? keyed.id : undefined, verdict.code, verdict.message);
        return;
      }
    }
    if (!node.serving && request.op !== "P" && request.op !== "I") {
      // An active that is held (confirming its role after a stall, or waiting for its clock to
      // reach a new epoch) knows no other active to send the client to: NO_ACTIVE, retry shortly.
      this.#redirect(request, node.role === "active" ? undefined : node.activeAddress);
      return;
    }
    switch (request.op) {
      case "A":
      case "Q":
        this.#acquire(request);
        return;
      case "Y":
      case "W":
        this.#tryAcquire(request);
        return;
      case "R":
        this.#release(request);
        return;
      case "X":
        this.#extend(request);
        return;
      case "C":
        this.#cancel(request);
        return;
      case "B":
        this.#bundle(request);
        return;
      case "P":
        this.#send(request.nonce === undefined ? { kind: "P" } : { kind: "P", nonce: request.nonce });
        return;
      case "I":
        this.#send({ kind: "I", fields: this.#info() });
        return;
      case "O":
      case "U":
        this.#watchVerbs.run(request);
        return;
    }
  }

  #acquire(request: VerbRequest<"A" | "Q">): void {
    const { op, key, id } = request;
    if (!this.#leaseInRange(op, key, id, request.leaseMs)) return;
    if (!this.#waitInRange(op, key, id, request.waitMs)) return;
    if (this.#pending >= this.#ctx.limits.maxPendingPerConnection) {
      this.error(op, key, id, "TOO_MANY_REQUESTS", "too many acquires queued on this connection");
      return;
    }
    if (!this.#withinKeyQuota(op, key, id)) return;
    const mode = op === "Q" ? request.mode : EXCLUSIVE;
    if (!this.#modeAvailable(op, key, id, mode)) return;
    const outcome = this.#ctx.node.acquire(this.#session, {
      key,
      leaseMs: request.leaseMs,
      waitMs: request.waitMs,
      id,
      payload: this,
      mode,
    });
    if (outcome.status === "granted") {
      if (!outcome.replayed) this.#ctx.node.observer.granted(0);
      if (op === "Q")
        this.#send({ kind: "Q", key, token: outcome.token, slot: outcome.slot, id: request.id });
      else this.#send({ kind: "A", key, token: outcome.token, id });
    } else if (outcome.status === "queued") {
      this.#pending += 1;
      if (op === "Q") {
        this.#modeIds ??= new Set();
        this.#modeIds.add(request.id);
      }
      (outcome.displaced as LockVerbs | undefined)?.displaced(id);
    } else this.#refuse(op, key, id, outcome, mode);
  }

  /** `B`: every key at once (engine/bundle.ts); replies name the first key as sent. */
  #bundle(request: VerbRequest<"B">): void {
    const { keys, id } = request;
    const key = keys[0]!;
    if (!this.#leaseInRange("B", key, id, request.leaseMs)) return;
    if (!this.#waitInRange("B", key, id, request.waitMs)) return;
    if (this.#pending >= this.#ctx.limits.maxPendingPerConnection) {
      this.error("B", key, id, "TOO_MANY_REQUESTS", "too many acquires queued on this connection");
      return;
    }
    if (!this.#withinKeyQuota("B", key, id, keys.length)) return;
    // The same condition as lock modes: a peer that cannot replicate them predates bundles too.
    const refusal = this.#ctx.node.lockModesRefusal();
    if (refusal !== undefined) {
      this.error(
        "B",
        key,
        id,
        "BUNDLES_UNAVAILABLE",
        refusal.replace("shared holders or permits", "bundles"),
      );
      return;
    }
    const input = { keys, leaseMs: request.leaseMs, waitMs: request.waitMs, id, payload: this };
    const outcome = this.#ctx.node.acquireAll(this.#session, input);
    if (outcome.status === "granted") {
      if (!outcome.replayed) this.#ctx.node.observer.granted(0);
      this.#send({ kind: "B", key, token: outcome.token, id });
    } else if (outcome.status === "queued") {
      this.#pending += 1;
      this.#bundleKeys ??= new Map();
      this.#bundleKeys.set(id, key);
      (outcome.displaced as LockVerbs | undefined)?.displaced(id);
    } else this.#refuse("B", key, id, outcome, EXCLUSIVE);
  }

  /** With a slot map, a bundle's keys must share one slot; answers CROSS_SLOT if not. */
  #sameSlot(request: VerbRequest<"B">): boolean {
    const other = crossSlotKey(request.keys);
    if (other === undefined) return true;
    const message = `${other} is in another key slot than ${request.keys[0]}: tag a bundle's keys alike ({tag}:key)`;
    this.error("B", request.keys[0]!, request.id, "CROSS_SLOT", message);
    return false;
  }

  #tryAcquire(request: VerbRequest<"Y" | "W">): void {
    const { op, key, id } = request;
    if (!this.#leaseInRange(op, key, id, request.leaseMs)) return;
    if (!this.#withinKeyQuota(op, key, id)) return;
    const mode = op === "W" ? request.mode : EXCLUSIVE;
    if (!this.#modeAvailable(op, key, id, mode)) return;
    const outcome = this.#ctx.node.tryAcquire(key, request.leaseMs, id, this.#session, mode);
    if (outcome.status === "granted") {
      if (!outcome.replayed) this.#ctx.node.observer.granted(0);
      if (op === "W")
        this.#send({ kind: "W", key, token: outcome.token, slot: outcome.slot, id: request.id });
      else this.#send({ kind: "Y", key, token: outcome.token, id });
    } else if (outcome.status === "busy") {
      this.#send({ kind: "N", key, id });
    } else this.#refuse(op, key, id, outcome, mode);
  }

  /** Shared holders and permits only while every cluster node can replicate them (rolling upgrade). */
  #modeAvailable(op: "A" | "Q" | "Y" | "W", key: string, id: string | undefined, mode: LockMode): boolean {
    if (mode.kind === "exclusive") return true;
    const refusal = this.#ctx.node.lockModesRefusal();
    if (refusal === undefined) return true;
    this.error(op, key, id, "LOCK_MODES_UNAVAILABLE", refusal);
    return false;
  }

  /** The engine refused an acquire: a limit, or a mode the key's kind or limit disagrees with. */
  #refuse(
    op: "A" | "Q" | "Y" | "W" | "B",
    key: string,
    id: string | undefined,
    outcome: Rejected<string>,
    mode: LockMode,
  ): void {
    this.error(op, key, id, outcome.code as ErrorCode, refusalMessage(outcome, mode));
  }

  #release(request: VerbRequest<"R">): void {
    const { key, token, id } = request;
    if (!this.#provesOwnership("R", key, token, id)) return;
    const released = this.#ctx.node.release(key, token);
    this.#send({ kind: "R", key, released });
  }

  #extend(request: VerbRequest<"X">): void {
    const { key, token, id } = request;
    if (!this.#leaseInRange("X", key, id, request.leaseMs)) return;
    if (!this.#provesOwnership("X", key, token, id)) return;
    this.#send({ kind: "X", key, extended: this.#ctx.node.extend(key, token, request.leaseMs) });
  }

  #cancel(request: VerbRequest<"C">): void {
    // The withdrawn acquire gets its own reply (`T`) on whichever session queued it.
    const sink = this.#ctx.node.cancel(request.key, request.id, (withdrawn) =>
      withdrawn.timedOut(request.key, request.id),
    );
    this.#send({ kind: "C", key: request.key, cancelled: sink !== undefined });
  }

  /**
   * A release or extension must come from the holder: on the session that was granted the key,
   * or with the acquire's request id. A stale token passes (it changes nothing and gets `0`).
   */
  #provesOwnership(op: "R" | "X", key: string, token: bigint, id: string | undefined): boolean {
    if (this.#ctx.node.ownership(key, token, this.#session, id) !== "not-owner") return true;
    this.error(
      op,
      key,
      id,
      "NOT_OWNER",
      id === undefined
        ? "this connection was not granted the key: send the acquire's request id"
        : "the request id is not the one the key was granted to",
    );
    return false;
  }

  /**
   * Whether this connection may take one more key: its grants plus queued acquires stay within
   * `maxKeysPerConnection` (a key it already holds is no new key). Answers TOO_MANY_CONNECTION_KEYS if not.
   * The engine counts the session's grants exactly (a lease expiry, a hand-off or a retry on
   * another connection ends one at once), so this costs no lookup below the quota.
   */
  #withinKeyQuota(op: "A" | "Y" | "Q" | "W" | "B", key: string, id: string | undefined, count = 1): boolean {
    const quota = this.#ctx.limits.maxKeysPerConnection;
    const session = this.#session;
    // A bundle counts each of its keys (a retry of one it holds is let through by its first key).
    if (session.heldCount + this.#pending + count - 1 < quota || this.#ctx.node.heldBy(key, session) > 0)
      return true;
    this.error(
      op,
      key,
      id,
      "TOO_MANY_CONNECTION_KEYS",
      `this connection holds or awaits ${quota} keys, its limit`,
    );
    return false;
  }

  #waitInRange(op: RequestOp, key: string, id: string | undefined, waitMs: number): boolean {
    if (waitMs <= this.#ctx.limits.maxWaitMs) return true;
    this.error(
      op,
      key,
      id,
      "WAIT_OUT_OF_RANGE",
      `wait must be at most ${this.#ctx.limits.maxWaitMs / 1000} s`,
    );
    return false;
  }

  #leaseInRange(op: RequestOp, key: string, id: string | undefined, leaseMs: number): boolean {
    if (leaseMs > 0 && leaseMs <= this.#ctx.limits.maxLeaseMs) return true;
    this.error(
      op,
      key,
      id,
      "LEASE_OUT_OF_RANGE",
      `lease must be above 0 and at most ${this.#ctx.limits.maxLeaseMs / 1000} s`,
    );
    return false;
  }

  #info(): Map<string, string> {
    const node = this.#ctx.node;
    return new Map([
      ["version", this.#ctx.version],
      ["role", node.role],
      ["node", node.advertise],
      ["active", node.activeAddress ?? "-"],
      ["epoch", node.reportedEpoch.toString()],
      ["keys", String(node.keyCount)],
      ["waiters", String(node.waiterCount)],
      ["connections", String(this.#ctx.connectionCount())],
      ["watches", String(node.watches.count)],
      ["uptime_ms", String(node.uptimeMs)],
    ]);
  }

  /** A standby answers lock verbs with the active's address, or `NO_ACTIVE` while it knows none. */
  #redirect(request: LockRequest, address: string | undefined): void {
    const key = "key" in request ? request.key : request.op === "B" ? request.keys[0]! : "-";
    const id = "id" in request ? request.id : undefined;
    if (address === undefined) {
      const held = this.#ctx.node.heldFor;
      const message =
        held === "stall"
          ? "this node is confirming it is still the active after a stall; retry shortly"
          : held === "clock"
            ? "this node's new token epoch starts within seconds (docs/consistency.md); retry shortly"
            : held === "lease"
              ? "this node's ownership lease is not confirmed by the coordinator right now; retry shortly"
              : "no active node is known yet; retry shortly";
      this.error(request.op, key, id, "NO_ACTIVE", message);
    } else {
      this.#send({ kind: "M", op: request.op, key, address, id });
    }
  }
}

/** The message of a refused acquire; LIMIT_MISMATCH's starts with `limit=<N>` for clients to read. */
function refusalMessage(outcome: Rejected<string>, mode: LockMode): string {
  if ("limit" in outcome)
    return `limit=${outcome.limit}: the key is a semaphore of ${outcome.limit} permits, not ${mode.kind === "permit" ? mode.limit : "?"}`;
  if ("current" in outcome)
    return outcome.current === "semaphore"
      ? "the key is a semaphore: acquire it with permits"
      : "the key is a lock (exclusive or shared): acquire it without permits";
  if (outcome.code === "TOO_MANY_KEYS") return "the server holds too many locks";
  if (outcome.code === "TOO_MANY_BUNDLE_KEYS")
    return "the bundle names more keys than the server allows in one";
  return "the key's wait queue is full";
}
