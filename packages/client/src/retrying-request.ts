import { RETRYABLE_CODES, type Reply, type Request } from "@lock/protocol";
import type { ReplyHandler, Ticket } from "./connection.js";
import { errorFromReply, NoServerError, ProtocolError } from "./errors.js";
import { type Linked, NEXT, OWNER, PREV } from "./linked-set.js";
import type { Timer, TimerQueue } from "./timers.js";
import type { Router } from "./transport.js";

/** More redirects in a row than this is a loop between misconfigured nodes, not a failover. */
export const MAX_REDIRECTS = 5;

/** How long and how often to retry; one object serves every request of a client. */
export interface RetryPolicy {
  /** Without a deadline of its own, a request gives up this long after its first attempt. */
  readonly windowMs: number;
  /** Pause after an attempt that got no usable answer. */
  readonly intervalMs: number;
  /** @internal The simulator's negative control: a new request id for every retry (a bug on purpose). */
  readonly freshId?: (() => string) | undefined;
}

/**
 * Called once: with `error` undefined and `request.reply` set, or with the error the request
 * failed with. `finished` runs first (the owner's bookkeeping), then `done` (the caller's).
 */
export type RetryCallback = (request: RetryingRequest, error: Error | undefined) => void;

/**
 * One idempotent request (release, extend, the probe for an orphaned grant) sent until it gets a
 * definitive reply: over any ready connection (at once on another after the first dropped connection),
 * again every `intervalMs` while none answers, straight to the address a redirect names, again after
 * `NO_ACTIVE` / `SHUTTING_DOWN`. Only idempotent requests
 * may use it: an attempt whose connection dropped may have taken effect before the next one.
 *
 * It fails with NoServerError once `untilMs` has passed without a definitive reply (the first
 * attempt always gets `intervalMs`), or with the error an `E` reply stands for. An attempt still in
 * flight then is not waited for (its connection's keepalive bounds it); a late reply is ignored.
 *
 * Callbacks rather than a promise, and no timer until an attempt fails: a release is on the hot
 * path of every lock, and the usual one is a single round trip.
 */
export class RetryingRequest implements ReplyHandler, Linked {
  [PREV]: Linked | undefined;
  [NEXT]: Linked | undefined;
  [OWNER]: Linked[typeof OWNER];
  readonly request: Request;
  /** The definitive reply, once there is one. */
  reply: Reply | undefined;
  /** The attempt that got `reply`. */
  ticket: Ticket | undefined;
  /**
   * When the first attempt whose reply was lost had been written (NaN if none was): that attempt
   * may have taken effect, which changes what a `0` answer to a later one means.
   */
  firstLostWriteAt = Number.NaN;
  readonly #router: Router;
  readonly #timers: TimerQueue;
  readonly #policy: RetryPolicy;
  readonly #untilMs: number | undefined;
  #startedAt = Number.NaN;
  readonly #finished: RetryCallback;
  readonly #done: RetryCallback;
  #current: Ticket | undefined;
  #pause: Timer | undefined;
  /** While pausing: wakes the request early once an active is known. */
  #wake: Timer | undefined;
  #giveUp: Timer | undefined;
  #redirects = 0;
  #retriedAtOnce = false;
  #lastError: Error | undefined;
  #over = false;
  #sentOnce = false;

  constructor(
    router: Router,
    timers: TimerQueue,
    request: Request,
    policy: RetryPolicy,
    /** Monotonic ms after which no further attempt starts; undefined: `windowMs` after the first. */
    untilMs: number | undefined,
    finished: RetryCallback,
    done: RetryCallback,
  ) {
    this.#router = router;
    this.#timers = timers;
    this.request = request;
    this.#policy = policy;
    this.#untilMs = untilMs;
    this.#finished = finished;
    this.#done = done;
    this.#attempt(undefined);
  }

  get over(): boolean {
    return this.#over;
  }

  /** Stops retrying and fails with `error` (the client is closing). */
  abandon(error: Error): void {
    this.#end(error);
  }

  onReply(reply: Reply, ticket: Ticket): void {
    if (ticket !== this.#current || this.#over) return;
    this.#current = undefined;
    if (Number.isNaN(this.#startedAt)) this.#startedAt = ticket.writtenAt;
    if (reply.kind === "M") {
      this.#router.redirected(ticket, reply.address);
      if (++this.#redirects > MAX_REDIRECTS) {
        this.#end(new ProtocolError(`more than ${MAX_REDIRECTS} redirects for ${this.request.op}`));
      } else {
        this.#attempt(reply.address);
      }
      return;
    }
    if (reply.kind === "S") {
      // A node behind the client's map would send it straight back here: ask again shortly.
      if (this.#router.slotMoved?.(ticket, reply) === false) {
        this.#retryLater(ticket.connection?.address, false);
      } else if (++this.#redirects > MAX_REDIRECTS) {
        this.#end(new ProtocolError(`more than ${MAX_REDIRECTS} redirects for ${this.request.op}`));
      } else {
        this.#attempt(undefined);
      }
      return;
    }
    if (reply.kind === "E") {
      if (!RETRYABLE_CODES.has(reply.code)) {
        this.#end(errorFromReply(reply));
        return;
      }
      if (reply.code === "SHUTTING_DOWN") this.#router.draining(ticket);
      this.#lastError = errorFromReply(reply);
      this.#retryLater(ticket.connection?.address);
      return;
    }
    this.#router.served(ticket);
    this.reply = reply;
    this.ticket = ticket;
    this.#end(undefined);
  }

  onLost(ticket: Ticket, written: boolean, error: Error | undefined): void {
    if (ticket !== this.#current || this.#over) return;
    this.#current = undefined;
    if (Number.isNaN(this.#startedAt)) this.#startedAt = ticket.writtenAt;
    if (written && Number.isNaN(this.firstLostWriteAt)) this.firstLostWriteAt = ticket.writtenAt;
    this.#lastError = error ?? this.#lastError;
    // A connection that dropped (the node stopped, or another claimed the active role while it was
    // silent) leaves the others: the first such loss goes to another connection at once, as an
    // acquire would. Later ones wait `intervalMs`, so a request nobody can answer does not spin.
    if (ticket.connection?.superseded || !this.#retriedAtOnce) {
      this.#retriedAtOnce = true;
      this.#attempt(undefined);
    } else this.#retryLater(ticket.address ?? ticket.connection?.address);
  }

  #attempt(address: string | undefined): void {
    this.#pause?.cancel();
    this.#pause = undefined;
    this.#wake?.cancel();
    this.#wake = undefined;
    if (this.#over) return;
    this.#current = this.#router.send(this.#nextRequest(), this, address);
    if (this.#current === undefined) this.#retryLater(address);
  }

  /** The request as it goes out: the same every time, but under the (test-only) fresh-id mutation. */
  #nextRequest(): Request {
    const request = this.request;
    const fresh = this.#sentOnce ? this.#policy.freshId : undefined;
    this.#sentOnce = true;
    if (fresh === undefined || !("id" in request) || request.id === undefined) return request;
    return { ...request, id: fresh() } as Request;
  }

  /**
   * Tries again after `intervalMs`, or sooner once a node other than `stuckAt` is the active (unless
   * not `wakeEarly`: only time helps a node behind the slot map).
   */
  #retryLater(stuckAt?: string, wakeEarly = true): void {
    // The cap is on redirects in a row: a paced retry after a failover is not a redirect loop.
    this.#redirects = 0;
    if (this.#giveUp === undefined) {
      // Set up only now: the usual request succeeds at once and never needs this timer. The first
      // attempt started at its write (or now, if it never got one), which is close enough.
      const { windowMs, intervalMs } = this.#policy;
      const untilMs = this.#untilMs;
      const startedAt = Number.isNaN(this.#startedAt) ? this.#timers.clock.now() : this.#startedAt;
      const giveUpAt = Math.max(untilMs ?? startedAt + windowMs, startedAt + intervalMs);
      const cause = () => ({ cause: this.#lastError });
      this.#giveUp = this.#timers.at(giveUpAt, () =>
        this.#end(new NoServerError(`no server answered ${this.request.op} in time`, cause())),
      );
    }
    this.#pause = this.#timers.after(this.#policy.intervalMs, () => this.#attempt(undefined));
    if (wakeEarly) this.#wake = this.#router.whenActive(() => this.#attempt(undefined), stuckAt);
  }

  #end(error: Error | undefined): void {
    if (this.#over) return;
    this.#over = true;
    this.#giveUp?.cancel();
    this.#pause?.cancel();
    this.#wake?.cancel();
    this.#finished(this, error);
    this.#done(this, error);
  }
}
