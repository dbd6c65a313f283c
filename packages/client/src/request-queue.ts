import {
  DEFAULT_LIMITS,
  encodeRequest,
  type ProtocolLimits,
  type Reply,
  type Request,
  type RequestOp,
} from "@lock/protocol";

/**
 * Where a request is in its life on one connection:
 * - `queued`: encoded, not yet handed to the socket. Withdrawing it is free: the server never saw it.
 * - `written`: handed to the socket, awaiting its reply. If the connection drops now, the outcome
 *   is unknown: the server may or may not have acted on it.
 * - `answered` / `withdrawn` / `dropped`: done; the queue no longer knows it.
 */
export type OutgoingState = "queued" | "written" | "answered" | "withdrawn" | "dropped";

/** One request on one connection. Subclasses carry whatever their sender needs for the outcome. */
export class Outgoing {
  state: OutgoingState = "queued";
  /** Monotonic ms at which it was handed to the socket; NaN until then. */
  writtenAt = Number.NaN;
  /** The encoded line while queued (kept so that a withdrawal can rebuild the batch). */
  line = "";
  sequence = 0;

  constructor(readonly request: Request) {}
}

/**
 * The requests of one connection, as a pure data structure: it encodes, batches and matches, and
 * never sees a socket or a clock (the caller passes the time of each write).
 *
 * Matching (docs/protocol.md, "Matching replies"): a reply that carries an id goes to the oldest
 * outstanding request with that verb and id; any other reply goes to the oldest outstanding request
 * with the same (verb, key), with or without an id. lockd answers every request but a waiting `A` at
 * once and in order, so only acquires need finding by id (kept in a map: one attempt of a call per
 * connection at a time); the rest are matched in send order, which also keeps apart requests that
 * share a verb and an id (two extensions of one lock). A reply that matches nothing is a protocol
 * violation, which the caller handles (by dropping the connection).
 *
 * Ordering: requests are written in `push` order; `takeWrites` hands out everything queued so far in
 * one string, so a caller that flushes once per tick writes one batch per tick.
 */
export class RequestQueue<T extends Outgoing> {
  readonly #limits: ProtocolLimits;
  // Acquires (`A`), by id: the only requests lockd may answer out of order.
  readonly #acquires = new Map<string, T>();
  // Every other request in send order, from #fifoHead on; answered ones leave a hole (undefined).
  // lockd answers these in order, so the match is nearly always the head: no per-key map to churn.
  #fifo: Array<T | undefined> = [];
  #fifoHead = 0;
  #queued: Array<T> = [];
  #batch = "";
  #outstanding = 0;
  #sequence = 0;

  constructor(limits: ProtocolLimits = DEFAULT_LIMITS) {
    this.#limits = limits;
  }

  /** Requests queued or written and not yet answered. */
  get outstanding(): number {
    return this.#outstanding;
  }

  /** True when `takeWrites` has something to hand out. */
  get hasWrites(): boolean {
    return this.#queued.length > 0;
  }

  /**
   * Encodes and queues `item`. Throws (TypeError/RangeError from the encoder) without queuing if
   * the request cannot be encoded, so a bad request never reaches the wire.
   */
  push(item: T): void {
    item.line = encodeRequest(item.request, this.#limits);
    item.state = "queued";
    item.sequence = this.#sequence++;
    this.#register(item);
    this.#queued.push(item);
    this.#batch += item.line;
    this.#outstanding += 1;
  }

  /** Takes back a request that was not written yet. False once written: it may have taken effect. */
  withdraw(item: T): boolean {
    if (item.state !== "queued") return false;
    item.state = "withdrawn";
    this.#unregister(item);
    this.#outstanding -= 1;
    this.#queued = this.#queued.filter((queued) => queued !== item);
    this.#batch = this.#queued.map((queued) => queued.line).join("");
    return true;
  }

  /** Marks everything queued as written at `nowMs` and returns it as one string ("" if none). */
  takeWrites(nowMs: number): string {
    const batch = this.#batch;
    for (const item of this.#queued) {
      item.state = "written";
      item.writtenAt = nowMs;
      item.line = "";
    }
    this.#queued = [];
    this.#batch = "";
    return batch;
  }

  /** The outstanding request `reply` answers, now marked answered; undefined if none. */
  match(reply: Reply): T | undefined {
    const op = answeredOp(reply);
    if (op === undefined) return undefined;
    const id = "id" in reply ? reply.id : undefined;
    const key = replyKey(reply);
    let item: T | undefined;
    if (op === "A") {
      // `A` and `Q` acquires, matched by id.
      // Without an id: an `E` for an acquire line lockd could not parse as far as the id.
      item = id !== undefined ? this.#acquires.get(id) : oldestWithKey(this.#acquires, key);
    } else {
      // By id first: `E Y - KEY_TOO_LONG <id>` names no key. `R key 1` and the like carry no id.
      item =
        (id !== undefined ? this.#oldestInFifo(op, id, idOf) : undefined) ??
        this.#oldestInFifo(op, key, requestKey);
    }
    if (item === undefined) return undefined;
    this.#unregister(item);
    item.state = "answered";
    this.#outstanding -= 1;
    return item;
  }

  /**
   * Empties the queue when the connection is gone. `unwritten` never reached the server and can be
   * sent elsewhere as they are; `written` have an unknown outcome. Both in send order.
   */
  takeAll(): { unwritten: Array<T>; written: Array<T> } {
    const unwritten = this.#queued;
    const written: Array<T> = [];
    for (const item of this.#acquires.values()) written.push(item);
    for (let i = this.#fifoHead; i < this.#fifo.length; i++) {
      const item = this.#fifo[i];
      if (item !== undefined) written.push(item);
    }
    const stillWritten = written.filter((item) => item.state === "written");
    stillWritten.sort((a, b) => a.sequence - b.sequence);
    for (const item of unwritten) item.state = "dropped";
    for (const item of stillWritten) item.state = "dropped";
    this.#acquires.clear();
    this.#fifo = [];
    this.#fifoHead = 0;
    this.#queued = [];
    this.#batch = "";
    this.#outstanding = 0;
    return { unwritten, written: stillWritten };
  }

  #register(item: T): void {
    const request = item.request;
    // One acquire call has one id and at most one attempt per connection at a time.
    const id = acquireId(request);
    if (id !== undefined) this.#acquires.set(id, item);
    else this.#fifo.push(item);
  }

  #unregister(item: T): void {
    const request = item.request;
    const id = acquireId(request);
    if (id !== undefined) {
      this.#acquires.delete(id);
      return;
    }
    const fifo = this.#fifo;
    const at = fifo.indexOf(item, this.#fifoHead);
    if (at >= 0) fifo[at] = undefined;
    while (this.#fifoHead < fifo.length && fifo[this.#fifoHead] === undefined) this.#fifoHead++;
    if (this.#fifoHead === fifo.length) {
      fifo.length = 0;
      this.#fifoHead = 0;
    } else if (this.#fifoHead > 1024 && this.#fifoHead * 2 > fifo.length) {
      this.#fifo = fifo.slice(this.#fifoHead);
      this.#fifoHead = 0;
    }
  }

  /** The oldest request in send order with verb `op` whose `field` (its key, or its id) is `value`. */
  #oldestInFifo(
    op: RequestOp,
    value: string,
    field: (request: Request) => string | undefined,
  ): T | undefined {
    const fifo = this.#fifo;
    for (let i = this.#fifoHead; i < fifo.length; i++) {
      const item = fifo[i];
      if (item !== undefined && matchedAs(item.request.op) === op && field(item.request) === value)
        return item;
    }
    return undefined;
  }
}

/**
 * The request verb a reply answers, as requests are matched: `Q` (an acquire in a mode) with `A`,
 * `W` with `Y`, since `T` and `N` answer both. Undefined for an `E ? …` that names none.
 */
export function answeredOp(reply: Reply): RequestOp | undefined {
  switch (reply.kind) {
    case "A":
    case "T":
    case "Q":
    case "B":
      return "A";
    case "Y":
    case "N":
    case "W":
      return "Y";
    case "M":
    case "S":
      return matchedAs(reply.op);
    case "E":
      return reply.op === "?" ? undefined : matchedAs(reply.op);
    default:
      return reply.kind;
  }
}

/** The id of a waiting acquire (`A`, `Q`) that has one: such requests are matched by it. */
function acquireId(request: Request): string | undefined {
  return request.op === "A" || request.op === "Q" || request.op === "B" ? request.id : undefined;
}

/** Acquires in a mode are matched like plain ones: `Q` as `A`, `W` as `Y`. */
export function matchedAs(op: RequestOp): RequestOp {
  return op === "Q" || op === "B" ? "A" : op === "W" ? "Y" : op;
}

function replyKey(reply: Reply): string {
  return "key" in reply ? reply.key : "-";
}

/** Keyless verbs (P, H, I) are matched under `-`, the key `M` and `E` replies use for them. */
function requestKey(request: Request): string {
  return "key" in request ? request.key : request.op === "B" ? request.keys[0]! : "-";
}

function idOf(request: Request): string | undefined {
  return "id" in request ? request.id : undefined;
}

function oldestWithKey<T extends Outgoing>(acquires: Map<string, T>, key: string): T | undefined {
  // Map iteration follows insertion, which is push order.
  for (const item of acquires.values()) if (requestKey(item.request) === key) return item;
  return undefined;
}
