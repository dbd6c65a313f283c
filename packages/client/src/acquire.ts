import { type LockMode, RETRYABLE_CODES, type Reply, type Request } from "@lock/protocol";
import type { ReplyHandler, Ticket } from "./connection.js";
import { AbortError, errorFromReply, LockTimeoutError, NoServerError, ProtocolError } from "./errors.js";
import { jittered, type Random } from "./jitter.js";
import { type Linked, NEXT, OWNER, PREV } from "./linked-set.js";
import { MAX_REDIRECTS } from "./retrying-request.js";
import type { Timer, TimerQueue } from "./timers.js";
import { AcquireTrace } from "./tracing.js";
import type { Router } from "./transport.js";

/** What one acquire (`A`, waiting) or try-acquire (`Y`) call asks for. */
export interface AcquireSpec {
  /** Waiting (`A`, or `Q` in a mode) or not (`Y`, or `W`). */
  readonly mode: "A" | "Y";
  /** How to hold the key: exclusive goes as `A`/`Y` (any lockd), shared and permits as `Q`/`W`. */
  readonly lockMode: LockMode;
  readonly key: string;
  readonly leaseMs: number;
  /** 0 waits forever. Ignored for `Y`. */
  readonly waitMs: number;
  /** Unique per call, the same for every retry of the call. */
  readonly id: string;
  /**
   * When no connection is usable: false fails at once (NoServerError); true tries again every
   * `retryIntervalMs` or so (jittered) until the wait runs out, so that the wait covers a restart.
   */
  readonly waitForReady: boolean;
  /** A bundle (`B`, `acquireAll`): every key at once; `key` is the first of them. */
  readonly keys?: readonly string[] | undefined;
}

/** What an acquire needs besides the connections. */
export interface AcquireContext<L> {
  readonly router: Router;
  readonly timers: TimerQueue;
  /** Pause before retrying after `NO_ACTIVE`; with `waitForReady`, while no connection is usable. */
  readonly retryIntervalMs: number;
  /** The random source for the jitter of `waitForReady`'s pauses. */
  readonly random: Random;
  /**
   * Turns a grant into what the call resolves with (a Lock). `leaseStartBound` is when the first
   * attempt was written: the server granted after that, so its lease ends no earlier than
   * `leaseStartBound + leaseMs`. `receivedAt` is when the grant arrived.
   */
  granted(
    op: AcquireOp<L>,
    token: bigint,
    leaseStartBound: number,
    receivedAt: number,
    slot: number | undefined,
  ): L | Promise<L>;
  /**
   * The call settled, whichever way, and no attempt of it is still unanswered on a connection (one
   * that is may yet bring a grant to release, so closing the client waits for it).
   */
  finished(op: AcquireOp<L>): void;
  /** A grant nobody wants any more (the call was aborted or gave up): release it in the background. */
  /** Releases a grant nobody wants; `id` is the acquire's request id, the proof of ownership. */
  releaseUnwanted(key: string, token: bigint, id: string | undefined): void;
  /** An attempt may have been granted but its reply was lost: find such a grant by id and release it. */
  releaseIfGranted(key: string, id: string, mode: LockMode): void;
  /** The call moves to another connection with the same id. */
  retried(spec: AcquireSpec, attempt: number, error: Error | undefined): void;
  /** @internal The simulator's negative control: a new request id for every retry (a bug on purpose). */
  readonly freshId?: (() => string) | undefined;
}

// With a bounded wait the server answers T at the deadline; this much later, a silent server is
// given up on, so `waitMs` bounds the call even when the server stalls.
export const REPLY_GRACE_MS = 2_000;

const IGNORE: ReplyHandler = { onReply() {}, onLost() {} };

/**
 * One acquire call: sends `A`/`Y` with the call's id, and follows it through redirects, retryable
 * errors and dropped connections until it is granted, refused, or given up.
 *
 * Retries: a drop re-sends the request with the same id on the next connection, so the server
 * answers with our own earlier grant (or our place in the queue) rather than granting twice; the
 * wait sent is what is left of `waitMs`, not `waitMs` again. After as many drops as there are
 * registered connections, or when no connection is open or opening even after opening those that
 * were down, the call fails with NoServerError (the seed's rule); with `waitForReady` it pauses and
 * tries again instead, until its wait runs out (a lockd restart). A cluster between actives (`NO_ACTIVE`,
 * or a redirect to an active that cannot be reached) is asked again every `retryIntervalMs` within
 * the wait instead: the node that answered is alive, so that is not a failed try.
 *
 * Giving up (abort, close, silent server) settles the promise at once. A request the server never
 * saw is withdrawn; one it saw is cancelled with `C key id` on its connection, and if the grant won
 * the race, or an attempt's outcome was lost with its connection, the grant is found and released
 * in the background, so no lock leaks.
 *
 * Ordering: at most one attempt is outstanding at a time; handlers run on socket and timer events.
 */
export class AcquireOp<L> implements ReplyHandler, Linked {
  [PREV]: Linked | undefined;
  [NEXT]: Linked | undefined;
  [OWNER]: Linked[typeof OWNER];
  readonly spec: AcquireSpec;
  /** Resolves with the lock, or null when a try-acquire found the key taken. */
  readonly promise: Promise<L | null>;
  readonly #ctx: AcquireContext<L>;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: (() => void) | undefined;
  readonly #deadline: number;
  #resolve!: (value: L | Promise<L> | null) => void;
  #reject!: (error: Error) => void;
  #ticket: Ticket | undefined;
  #tries = 0;
  /** Moves that are not failed tries of our connections (see onLost). */
  #moves = 0;
  /** waitForReady's pauses while no connection was usable. */
  #pauses = 0;
  #redirects = 0;
  #firstWrittenAt = Number.NaN;
  // An attempt was written and its connection dropped: the server may hold a grant for our id.
  #unresolvedWrite = false;
  #settled = false;
  #finished = false;
  #timer: Timer | undefined;
  /** While pausing between actives: wakes the call early once an active is known. */
  #wake: Timer | undefined;
  #backstop: Timer | undefined;
  #sentOnce = false;
  /** The call's OpenTelemetry spans (tracing.ts); undefined when tracing is off. */
  readonly trace: AcquireTrace | undefined;

  /** Sends the first attempt at once. The signal must not be aborted yet. */
  constructor(spec: AcquireSpec, ctx: AcquireContext<L>, signal: AbortSignal | undefined) {
    this.spec = spec;
    this.#ctx = ctx;
    this.#signal = signal;
    this.trace = AcquireTrace.start(
      spec.key,
      spec.lockMode.kind,
      spec.mode === "A" ? spec.waitMs : undefined,
    );
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (signal !== undefined) {
      this.#onAbort = () =>
        this.giveUp(new AbortError(`acquire of ${JSON.stringify(spec.key)}`, signal.reason));
      signal.addEventListener("abort", this.#onAbort);
    }
    const bounded = spec.mode === "A" && spec.waitMs > 0;
    this.#deadline = bounded ? ctx.timers.clock.now() + spec.waitMs : Number.POSITIVE_INFINITY;
    if (bounded) {
      this.#backstop = ctx.timers.at(this.#deadline + REPLY_GRACE_MS, () =>
        this.giveUp(
          new LockTimeoutError(spec.key, spec.waitMs, {
            cause: new NoServerError("the server did not answer within the wait"),
          }),
        ),
      );
    }
    this.#attempt(undefined);
  }

  get settled(): boolean {
    return this.#settled;
  }

  /** Settled, with no attempt left unanswered on a connection (see AcquireContext.finished). */
  get finished(): boolean {
    return this.#finished;
  }

  /** Settles with `error` now and withdraws whatever the server may still do for this call. */
  giveUp(error: Error): void {
    if (this.#settled) return;
    this.#settle(undefined, error);
    const ticket = this.#ticket;
    if (ticket !== undefined && this.#ctx.router.withdraw(ticket)) {
      this.#ticket = undefined;
    } else if (ticket !== undefined && this.spec.mode === "A") {
      // Same connection as the acquire: the server answers the acquire (T, or the grant that won
      // the race) before it answers the cancel, and onReply releases a grant that arrives late.
      const cancel: Request = { op: "C", key: this.spec.key, id: this.spec.id };
      this.#ctx.router.sendAlongside(ticket, cancel, IGNORE);
    }
    if (this.#ticket === undefined && this.#unresolvedWrite) {
      this.#ctx.releaseIfGranted(this.spec.key, this.spec.id, this.spec.lockMode);
    }
    this.#finishIfDone();
  }

  onReply(reply: Reply, ticket: Ticket): void {
    if (ticket !== this.#ticket) return;
    this.#ticket = undefined;
    if (Number.isNaN(this.#firstWrittenAt)) this.#firstWrittenAt = ticket.writtenAt;
    if (this.#settled) {
      if (
        reply.kind === "A" ||
        reply.kind === "Y" ||
        reply.kind === "Q" ||
        reply.kind === "W" ||
        reply.kind === "B"
      )
        this.#ctx.releaseUnwanted(reply.key, reply.token, reply.id);
      else if (this.#unresolvedWrite && reply.kind !== "T" && reply.kind !== "N") {
        this.#ctx.releaseIfGranted(this.spec.key, this.spec.id, this.spec.lockMode);
      }
      this.#finishIfDone();
      return;
    }
    switch (reply.kind) {
      case "A":
      case "Y":
      case "Q":
      case "W":
      case "B":
        this.#ctx.router.served(ticket);
        this.#grant(
          reply.token,
          ticket.connection?.lastReceivedAt ?? this.#ctx.timers.clock.now(),
          reply.kind === "Q" || reply.kind === "W" ? reply.slot : undefined,
        );
        return;
      case "T":
        this.#ctx.router.served(ticket);
        this.#settle(undefined, new LockTimeoutError(this.spec.key, this.spec.waitMs));
        return;
      case "N":
        this.#ctx.router.served(ticket);
        this.#settle(null, undefined);
        return;
      case "M":
        this.#ctx.router.redirected(ticket, reply.address);
        this.trace?.event("redirect", { "lock.redirect.to": reply.address });
        if (++this.#redirects > MAX_REDIRECTS) {
          this.#fail(new ProtocolError(`more than ${MAX_REDIRECTS} redirects for ${this.spec.key}`));
        } else {
          this.#attempt(reply.address);
        }
        return;
      case "S":
        // Another cluster serves the key: the router sends the same request (same id) there. Or a
        // node behind the client's map (a move's commit not read yet): ask it again shortly.
        this.trace?.event("redirect", { "lock.redirect.to": "another cluster" });
        if (this.#ctx.router.slotMoved?.(ticket, reply) === false) {
          this.#backOff(undefined, ticket.connection?.address, false);
        } else if (++this.#redirects > MAX_REDIRECTS) {
          this.#fail(new ProtocolError(`more than ${MAX_REDIRECTS} redirects for ${this.spec.key}`));
        } else {
          this.#attempt(undefined);
        }
        return;
      case "E":
        this.#onError(reply.code, reply.message, ticket);
        return;
      default:
        this.#fail(new ProtocolError(`unexpected ${reply.kind} reply to ${this.spec.mode}`));
    }
  }

  onLost(ticket: Ticket, written: boolean, error: Error | undefined): void {
    if (ticket !== this.#ticket) return;
    this.#ticket = undefined;
    if (written) {
      this.#unresolvedWrite = true;
      if (Number.isNaN(this.#firstWrittenAt)) this.#firstWrittenAt = ticket.writtenAt;
    }
    if (this.#settled) {
      if (this.#unresolvedWrite) this.#ctx.releaseIfGranted(this.spec.key, this.spec.id, this.spec.lockMode);
      this.#finishIfDone();
      return;
    }
    // Not failed tries of our connections, since another node answers:
    // - dropped because another node says it is the active while this one was silent (superseded);
    // - written to the active a redirect named, whose connection then dropped: it died while we
    //   waited there, or it is a dead node behind a proxy that accepts and resets.
    // Either way, move on at once with the same id and the wait left.
    if (ticket.connection?.superseded || (written && ticket.address !== undefined)) {
      this.#moves += 1;
      this.#retried(error);
      this.#attempt(undefined);
      return;
    }
    // The active a redirect named could not be reached: during a failover the standbys point at the
    // old active until they notice it is gone. Not a failed try either: ask again shortly.
    if (ticket.address !== undefined) this.#backOff(error, ticket.address);
    else this.#nextConnection(error);
  }

  #onError(code: Parameters<typeof errorFromReply>[0]["code"], message: string, ticket: Ticket): void {
    const error = errorFromReply({ code, message });
    if (code === "SLOT_MOVING") {
      // The key's slot is moving between clusters: asked again within the wait, with the same id,
      // it reaches the slot's owner once the move committed (an S reply from the source). Only time
      // ends a drain: an active found elsewhere (any reply) must not wake it into a busy loop.
      this.#backOff(error, undefined, false);
    } else if (!RETRYABLE_CODES.has(code)) {
      this.#fail(error);
    } else if (code === "SHUTTING_DOWN") {
      // The node is going away: move on as if the connection had dropped (it is about to).
      this.#ctx.router.draining(ticket);
      this.#nextConnection(error);
    } else {
      // NO_ACTIVE: a standby that knows no active yet, or an active that does not serve for a moment.
      this.#backOff(error, ticket.connection?.address);
    }
  }

  /**
   * Asks again after `retryIntervalMs`, if the wait allows: the cluster is between actives. Sooner if
   * a node other than `stuckAt` (the one that cannot serve it now) turns out to be the active,
   * unless not `wakeEarly` (only time helps a node behind the slot map).
   */
  #backOff(error: Error | undefined, stuckAt: string | undefined, wakeEarly = true): void {
    this.#redirects = 0;
    if (this.#ctx.timers.clock.now() + this.#ctx.retryIntervalMs >= this.#deadline) {
      this.#fail(new LockTimeoutError(this.spec.key, this.spec.waitMs, { cause: error }));
    } else {
      this.#timer = this.#ctx.timers.after(this.#ctx.retryIntervalMs, () => this.#attempt(undefined));
      if (wakeEarly) this.#wake = this.#ctx.router.whenActive(() => this.#attempt(undefined), stuckAt);
    }
  }

  #nextConnection(error: Error | undefined): void {
    this.#tries += 1;
    if (this.#tries >= this.#ctx.router.size) {
      this.#noConnection(error);
      return;
    }
    this.#retried(error);
    this.#attempt(undefined);
  }

  #retried(error: Error | undefined): void {
    const attempt = this.#attemptNumber();
    this.trace?.event("retry", { "lock.attempt": attempt, "lock.retry.reason": error?.message ?? "" });
    this.#ctx.retried(this.spec, attempt, error);
  }

  /** Which attempt of the call the next one is (1 for the first). */
  #attemptNumber(): number {
    return this.#tries + this.#moves + this.#pauses + 1;
  }

  #attempt(address: string | undefined): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#wake?.cancel();
    this.#wake = undefined;
    if (this.#settled) return;
    const { mode, lockMode, key, leaseMs } = this.spec;
    const plain = lockMode.kind === "exclusive";
    const id = this.#sentOnce && this.#ctx.freshId ? this.#ctx.freshId() : this.spec.id;
    this.#sentOnce = true;
    let request: Request;
    if (mode === "Y") {
      request = plain ? { op: "Y", key, leaseMs, id } : { op: "W", key, mode: lockMode, leaseMs, id };
    } else {
      // The wait left, not the wait asked for: a retry must not restart the caller's budget. At
      // least 1 ms, so that a retry after a lost reply still asks (and finds an earlier grant).
      const waitMs =
        this.#deadline === Number.POSITIVE_INFINITY
          ? 0
          : Math.max(1, Math.ceil(this.#deadline - this.#ctx.timers.clock.now()));
      request =
        this.spec.keys !== undefined
          ? { op: "B", keys: this.spec.keys, leaseMs, waitMs, id }
          : plain
            ? { op: "A", key, leaseMs, waitMs, id }
            : { op: "Q", key, mode: lockMode, leaseMs, waitMs, id };
    }
    this.#ticket = this.#ctx.router.send(request, this, address);
    if (this.#ticket !== undefined) return;
    if (address !== undefined) this.#backOff(this.#ctx.router.lastError, address);
    else this.#noConnection(this.#ctx.router.lastError);
  }

  /**
   * No connection is usable (every one was tried, or none is open or opening). Without
   * `waitForReady` that is the end (the seed's rule: report it). With it, try again after a pause
   * of `retryIntervalMs` plus up to as much again at random (clients that lost the same node do not
   * retry in step), as long as the wait lasts: each attempt opens the connections that are down.
   */
  #noConnection(error: Error | undefined): void {
    // An auth refusal is an answer, not an absence: waiting longer would not change it.
    if (!this.spec.waitForReady || error?.name === "AuthError") {
      this.#fail(this.#noServer(error));
      return;
    }
    const now = this.#ctx.timers.clock.now();
    const pause = jittered(this.#ctx.retryIntervalMs, this.#ctx.retryIntervalMs, this.#ctx.random);
    this.#timer = this.#ctx.timers.at(Math.min(now + pause, this.#deadline), () => {
      this.#timer = undefined;
      if (this.#ctx.timers.clock.now() >= this.#deadline) {
        this.#fail(this.#noServer(this.#ctx.router.lastError ?? error));
        return;
      }
      this.#pauses += 1;
      this.#retried(error);
      this.#attempt(undefined);
    });
  }

  #noServer(error: Error | undefined): Error {
    // An auth refusal explains itself better than "no server".
    if (error?.name === "AuthError") return error;
    const key = JSON.stringify(this.spec.key);
    const size = this.#ctx.router.size;
    const message = this.spec.waitForReady
      ? `no server could be reached for ${key} within the ${this.spec.waitMs} ms wait`
      : `no usable connection for ${key}: ${size === 1 ? "its connection is" : `all ${size} connections are`} down`;
    return new NoServerError(message, { cause: error });
  }

  /** Settles with an error; a grant the server may hold for a lost attempt is released. */
  #fail(error: Error): void {
    this.#settle(undefined, error);
    if (this.#ticket === undefined && this.#unresolvedWrite) {
      this.#ctx.releaseIfGranted(this.spec.key, this.spec.id, this.spec.lockMode);
    }
  }

  #grant(token: bigint, receivedAt: number, slot: number | undefined): void {
    this.trace?.settled(token, undefined);
    let value: L | Promise<L>;
    try {
      value = this.#ctx.granted(this, token, this.#firstWrittenAt, receivedAt, slot);
    } catch (error) {
      this.#ctx.releaseUnwanted(this.spec.key, token, this.spec.id);
      this.#settle(undefined, error as Error);
      return;
    }
    this.#settle(value, undefined);
  }

  #settle(value: L | Promise<L> | null | undefined, error: Error | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    if (value === null || error !== undefined) this.trace?.settled(undefined, error);
    this.#timer?.cancel();
    this.#wake?.cancel();
    this.#backstop?.cancel();
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener("abort", this.#onAbort);
    if (error !== undefined) this.#reject(error);
    else this.#resolve(value ?? null);
    this.#finishIfDone();
  }

  #finishIfDone(): void {
    if (this.#finished || !this.#settled || this.#ticket !== undefined) return;
    this.#finished = true;
    this.#ctx.finished(this);
  }
}
