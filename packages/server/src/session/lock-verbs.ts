import type { ErrorCode, Reply, Request, RequestOp } from "@lock/protocol";
import type { Session } from "../engine/records.js";
import type { ServerLimits } from "../limits.js";
import type { AcquireSink, LockNode } from "../node.js";
import { ConnectionKeys } from "./connection-keys.js";

/** What the lock verbs of every connection share: the node, the limits, the facts `I` reports. */
export interface VerbContext {
  readonly node: LockNode;
  readonly limits: ServerLimits;
  readonly version: string;
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
 * keeps its held keys plus queued acquires within `maxKeysPerConnection` (ConnectionKeys).
 */
export class LockVerbs implements AcquireSink {
  readonly #ctx: VerbContext;
  readonly #session: Session<AcquireSink>;
  readonly #send: (reply: Reply) => void;
  readonly #keys: ConnectionKeys;
  #pending = 0;

  /** `label`: who the session is (the client's address), shown as a key's holder by `/locks`. */
  constructor(ctx: VerbContext, send: (reply: Reply) => void, label?: string) {
    this.#ctx = ctx;
    this.#send = send;
    this.#session = ctx.node.openSession(label);
    const clock = ctx.node.clock;
    this.#keys = new ConnectionKeys(() => clock.now());
  }

  /** Queued acquires of this session. */
  get pending(): number {
    return this.#pending;
  }

  granted(key: string, token: bigint, id: string | undefined): void {
    this.#pending -= 1;
    this.#keys.granted(key, token);
    this.#send({ kind: "A", key, token, id });
  }

  timedOut(key: string, id: string | undefined): void {
    this.#pending -= 1;
    this.#send({ kind: "T", key, id });
  }

  /** A retry of one of our queued acquires (same id) took its place on another session. */
  displaced(): void {
    this.#pending -= 1;
  }

  /** Answers every queued acquire with `code` (the client retries elsewhere) and ends the session. */
  failPending(code: ErrorCode, message: string): void {
    for (const { key, id } of this.#ctx.node.sessionWaiters(this.#session)) {
      this.#send({ kind: "E", op: "A", key, id, code, message });
    }
    this.close();
  }

  /** Answers every queued acquire with a redirect to `address` and drops it (role change). */
  redirectPending(address: string): void {
    for (const { key, id } of this.#ctx.node.sessionWaiters(this.#session)) {
      this.#send({ kind: "M", op: "A", key, address, id });
    }
    this.#ctx.node.closeSession(this.#session);
    this.#pending = 0;
  }

  /** The session is over: its queued acquires are withdrawn, its holders keep their leases. */
  close(): void {
    this.#ctx.node.closeSession(this.#session);
    this.#pending = 0;
  }

  /** Sends an error reply, counted by the observer like every `E`. */
  error(op: RequestOp | "?", key: string, id: string | undefined, code: ErrorCode, message: string): void {
    this.#ctx.node.observer.error(code);
    this.#send({ kind: "E", op, key, id, code, message });
  }

  run(request: LockRequest): void {
    const node = this.#ctx.node;
    if (!node.serving && request.op !== "P" && request.op !== "I") {
      // An active that is held (confirming its role after a stall, or waiting for its clock to
      // reach a new epoch) knows no other active to send the client to: NO_ACTIVE, retry shortly.
      this.#redirect(request, node.role === "active" ? undefined : node.activeAddress);
      return;
    }
    switch (request.op) {
      case "A":
        this.#acquire(request);
        return;
      case "Y":
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
      case "P":
        this.#send(request.nonce === undefined ? { kind: "P" } : { kind: "P", nonce: request.nonce });
        return;
      case "I":
        this.#send({ kind: "I", fields: this.#info() });
        return;
    }
  }

  #acquire(request: VerbRequest<"A">): void {
    const { key, id } = request;
    if (!this.#leaseInRange(request.op, key, id, request.leaseMs)) return;
    if (request.waitMs > this.#ctx.limits.maxWaitMs) {
      this.error(
        "A",
        key,
        id,
        "WAIT_OUT_OF_RANGE",
        `wait must be at most ${this.#ctx.limits.maxWaitMs / 1000} s`,
      );
      return;
    }
    if (this.#pending >= this.#ctx.limits.maxPendingPerConnection) {
      this.error("A", key, id, "TOO_MANY_REQUESTS", "too many acquires queued on this connection");
      return;
    }
    if (!this.#withinKeyQuota("A", key, id)) return;
    const outcome = this.#ctx.node.acquire(this.#session, {
      key,
      leaseMs: request.leaseMs,
      waitMs: request.waitMs,
      id,
      payload: this,
    });
    if (outcome.status === "granted") {
      if (!outcome.replayed) this.#ctx.node.observer.granted(0);
      this.#keys.granted(key, outcome.token);
      this.#send({ kind: "A", key, token: outcome.token, id });
    } else if (outcome.status === "queued") {
      this.#pending += 1;
      (outcome.displaced as LockVerbs | undefined)?.displaced();
    } else {
      this.error(
        "A",
        key,
        id,
        outcome.code,
        outcome.code === "TOO_MANY_KEYS" ? "the server holds too many keys" : "the key's wait queue is full",
      );
    }
  }

  #tryAcquire(request: VerbRequest<"Y">): void {
    const { key, id } = request;
    if (!this.#leaseInRange(request.op, key, id, request.leaseMs)) return;
    if (!this.#withinKeyQuota("Y", key, id)) return;
    const outcome = this.#ctx.node.tryAcquire(key, request.leaseMs, id, this.#session);
    if (outcome.status === "granted") {
      if (!outcome.replayed) this.#ctx.node.observer.granted(0);
      this.#keys.granted(key, outcome.token);
      this.#send({ kind: "Y", key, token: outcome.token, id });
    } else if (outcome.status === "busy") {
      this.#send({ kind: "N", key, id });
    } else this.error("Y", key, id, outcome.code, "the server holds too many keys");
  }

  #release(request: VerbRequest<"R">): void {
    const { key, token, id } = request;
    if (!this.#provesOwnership("R", key, token, id)) return;
    const released = this.#ctx.node.release(key, token);
    if (released) this.#keys.released(key, token);
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
    const sink = this.#ctx.node.cancel(request.key, request.id);
    sink?.timedOut(request.key, request.id);
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
   * Whether this connection may take one more key: held keys plus queued acquires stay within
   * `maxKeysPerConnection` (a key it already holds is no new key). Answers TOO_MANY_CONNECTION_KEYS if not.
   */
  #withinKeyQuota(op: "A" | "Y", key: string, id: string | undefined): boolean {
    const quota = this.#ctx.limits.maxKeysPerConnection;
    const node = this.#ctx.node;
    const session = this.#session;
    if (
      this.#keys.has(key) ||
      this.#keys.admits(
        this.#pending,
        quota,
        (held, token) => node.ownership(held, token, session, undefined) === "holder",
      )
    )
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
      ["uptime_ms", String(node.uptimeMs)],
    ]);
  }

  /** A standby answers lock verbs with the active's address, or `NO_ACTIVE` while it knows none. */
  #redirect(request: LockRequest, address: string | undefined): void {
    const key = "key" in request ? request.key : "-";
    const id = "id" in request ? request.id : undefined;
    if (address === undefined) {
      const held = this.#ctx.node.heldFor;
      const message =
        held === "stall"
          ? "this node is confirming it is still the active after a stall; retry shortly"
          : held === "clock"
            ? "this node's new token epoch starts within seconds (docs/consistency.md); retry shortly"
            : "no active node is known yet; retry shortly";
      this.error(request.op, key, id, "NO_ACTIVE", message);
    } else {
      this.#send({ kind: "M", op: request.op, key, address, id });
    }
  }
}
