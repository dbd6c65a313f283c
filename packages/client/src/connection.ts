import {
  DEFAULT_LIMITS,
  FATAL_CODES,
  isDecodeError,
  type Reply,
  ReplyDecoder,
  type Request,
} from "@lock/protocol";
import { AuthError, LockServerError, NoServerError, ProtocolError } from "./errors.js";
import { openSocket } from "./open-socket.js";
import type { ResolvedOptions } from "./options.js";
import { matchedAs, Outgoing, RequestQueue } from "./request-queue.js";
import type { PoolSlot } from "./server-pool.js";
import { SilenceWatch } from "./silence-watch.js";
import type { ClientSocket } from "./socket.js";
import type { Timer, TimerQueue } from "./timers.js";

/**
 * What a request's sender hears back. Exactly one of the two is called per ticket, once, from the
 * socket's event handlers (never synchronously inside `send`).
 */
export interface ReplyHandler {
  onReply(reply: Reply, ticket: Ticket): void;
  /**
   * The request will get no reply on this connection. `written`: it was handed to the socket, so it
   * may have taken effect; otherwise the server never saw it. `error` says why, when known.
   */
  onLost(ticket: Ticket, written: boolean, error: Error | undefined): void;
}

/**
 * Told of the pushes for one watched key on one connection (docs/protocol.md, "Watching a key"):
 * `pushed` with each `O` state, or with the `M`/`E`/`S` that ended the watch; `ended` when the
 * connection closed. Called from the socket's event handlers.
 */
export interface WatchListener {
  pushed(reply: Reply): void;
  ended(): void;
}

/** A request on its way: the connection it went out on (if any yet) and who handles its outcome. */
export class Ticket extends Outgoing {
  connection: Connection | undefined;

  constructor(
    request: Request,
    readonly handler: ReplyHandler,
    /** Only a connection to this address may carry it (a redirect named it). */
    readonly address: string | undefined,
  ) {
    super(request);
  }
}

/**
 * What a connection tells its owner, in this order for one connection: ready, then any number of
 * silent/spoke pairs, then closed once.
 */
export interface ConnectionListener {
  ready(connection: Connection): void;
  /** It owes replies and nothing has arrived for the answer timeout (SilenceWatch). */
  silent(connection: Connection): void;
  /** Bytes arrived after `silent`. */
  spoke(connection: Connection): void;
  /** Whether another node could take over from this one: without one, silence is not watched. */
  hasAlternatives(connection: Connection): boolean;
  /** Called before the handlers of the requests it carried hear `onLost`. */
  closed(connection: Connection, error: Error | undefined): void;
}

/**
 * The socket adapter: one TCP or TLS socket to one lockd, with its RequestQueue and ReplyDecoder.
 * Opens, authenticates (`H` first), writes batches once per tick (waiting for `drain` when the
 * socket's buffer is full), hands matched replies to their handlers and pings an idle server. It makes
 * no retry decisions: those belong to the handlers.
 *
 * Only public `node:net` / `node:tls` APIs: a library must not break an application that runs with
 * `--throw-deprecation`, or on a Node whose internals moved. Reads use `net.connect`'s `onread`
 * option; writes are one `socket.write` per batch. The socket comes from socket.ts: Node's, or the
 * `connect` option's (a simulated network).
 */
export class Connection {
  readonly slot: PoolSlot;
  readonly #options: ResolvedOptions;
  readonly #timers: TimerQueue;
  readonly #listener: ConnectionListener;
  readonly #queue: RequestQueue<Ticket>;
  readonly #decoder: ReplyDecoder;
  readonly #socket: ClientSocket;
  #ready = false;
  #closed = false;
  #error: Error | undefined;
  #flushScheduled = false;
  #waitingForDrain = false;
  #connectTimer: Timer | undefined;
  #keepAliveTimer: Timer | undefined;
  #lastReceivedAt: number;
  #pingOutstanding = false;
  #receivedAny = false;
  readonly #silence: SilenceWatch | undefined;
  #silenceTimer: Timer | undefined;
  #superseded = false;
  /** Watched keys: whoever listens to each key's pushes on this connection. */
  readonly #watches = new Map<string, Set<WatchListener>>();

  constructor(slot: PoolSlot, options: ResolvedOptions, timers: TimerQueue, listener: ConnectionListener) {
    this.slot = slot;
    this.#options = options;
    this.#timers = timers;
    this.#listener = listener;
    const limits = { maxLineBytes: DEFAULT_LIMITS.maxLineBytes, maxKeyBytes: options.maxKeyBytes };
    this.#queue = new RequestQueue<Ticket>(limits);
    this.#decoder = new ReplyDecoder(limits);
    this.#lastReceivedAt = timers.clock.now();
    if (options.answerTimeoutMs > 0)
      this.#silence = new SilenceWatch(options.answerTimeoutMs, this.#lastReceivedAt);
    const socket = openSocket(slot.address, options, {
      onData: (chunk) => this.#onData(chunk),
      onConnect: () => this.#onConnect(),
    });
    this.#socket = socket;
    // A batch is a complete set of requests: waiting for more (Nagle) would only delay the replies.
    socket.setNoDelay?.(true);
    socket.on("drain", () => {
      this.#waitingForDrain = false;
      this.#flush();
    });
    socket.on("error", (error) => {
      this.#error ??= error;
    });
    socket.on("close", () => this.#onClose());
    this.#connectTimer = timers.after(options.connectTimeoutMs, () =>
      this.destroy(new NoServerError(`connecting to ${slot.address} timed out`)),
    );
  }

  get address(): string {
    return this.slot.address;
  }

  get isReady(): boolean {
    return this.#ready && !this.#closed;
  }

  /** Monotonic ms of the last data received: when the replies being handled now arrived. */
  get lastReceivedAt(): number {
    return this.#lastReceivedAt;
  }

  /** Whether any byte came back on it (an authenticated connection has had its `H` answered). */
  get receivedAny(): boolean {
    return this.#receivedAny;
  }

  /**
   * It was dropped because another node claimed the active role while this one was silent: what
   * it carried moves on without counting as a failed try (the node it moves to answers).
   */
  get superseded(): boolean {
    return this.#superseded;
  }

  /** Routes `key`'s pushes here to `listener` (its `O` was answered on this connection). */
  watch(key: string, listener: WatchListener): void {
    if (this.#closed) {
      listener.ended();
      return;
    }
    let listeners = this.#watches.get(key);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watches.set(key, listeners);
    }
    listeners.add(listener);
  }

  /** Stops routing `key`'s pushes to `listener`; sends `U` once nobody here listens to the key. */
  unwatch(key: string, listener: WatchListener): void {
    const listeners = this.#watches.get(key);
    if (!listeners?.delete(listener) || listeners.size > 0) return;
    this.#watches.delete(key);
    if (!this.#closed) this.send(new Ticket({ op: "U", key }, IGNORED, undefined));
  }

  /** Queues `ticket` for the next batch. Throws if the request cannot be encoded. */
  send(ticket: Ticket): void {
    // A lone request (nothing else in flight here) goes out at once: waiting for the end of the
    // tick only pays when others join the batch, and a request alone is what sequential callers send.
    const alone = this.#queue.outstanding === 0 && this.#ready && !this.#flushScheduled;
    this.#queue.push(ticket);
    ticket.connection = this;
    if (this.#silence !== undefined) {
      this.#silence.sent(matchedAs(ticket.request.op) !== "A", this.#timers.clock.now());
      this.#armSilence();
    }
    if (alone) this.#flush();
    else this.#scheduleFlush();
  }

  /** Takes back a ticket not yet written; false once written (or not on this connection). */
  withdraw(ticket: Ticket): boolean {
    if (ticket.connection !== this || !this.#queue.withdraw(ticket)) return false;
    this.#silence?.settled(matchedAs(ticket.request.op) !== "A");
    return true;
  }

  /**
   * Closes at once; the requests it carried are reported lost. `superseded`: another node claimed
   * the active role while this one was silent (see the getter).
   */
  destroy(error?: Error, superseded = false): void {
    this.#error ??= error;
    this.#superseded ||= superseded;
    this.#socket.destroy();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#waitingForDrain) return;
    this.#flushScheduled = true;
    // One write per tick: everything sent during this turn of the event loop goes out together.
    process.nextTick(this.#flushOnTick);
  }

  readonly #flushOnTick = (): void => {
    this.#flushScheduled = false;
    this.#flush();
  };

  #flush(): void {
    if (this.#closed || this.#waitingForDrain || !this.#queue.hasWrites) return;
    // Destroyed but not yet closed: what is queued never reaches the server, and `close` reports it
    // so (unwritten), which lets it move to another connection as it is.
    if (this.#socket.destroyed) return;
    const batch = this.#queue.takeWrites(this.#timers.clock.now());
    // False: the socket buffers more than its high-water mark; hold further batches until 'drain'.
    if (!this.#socket.write(batch)) this.#waitingForDrain = true;
  }

  #onConnect(): void {
    this.#connectTimer?.cancel();
    this.#socket.setKeepAlive?.(true, 15_000);
    if (this.#options.authToken === undefined) {
      this.#becomeReady();
      return;
    }
    // The connect timeout covers authentication too: a server that never answers H is no server.
    this.#connectTimer = this.#timers.after(this.#options.connectTimeoutMs, () =>
      this.destroy(new NoServerError(`${this.address} did not answer the authentication in time`)),
    );
    this.send(new Ticket({ op: "H", secret: this.#options.authToken }, this.#hello, undefined));
  }

  readonly #hello: ReplyHandler = {
    onReply: (reply) => {
      this.#connectTimer?.cancel();
      // A standby may redirect H like any verb; the connection still works (requests get redirected).
      if (reply.kind === "H" || reply.kind === "M") {
        this.#becomeReady();
      } else if (reply.kind === "E" && (reply.code === "AUTH_FAILED" || reply.code === "NOT_AUTHENTICATED")) {
        this.destroy(new AuthError(`${this.address} refused the auth token (${reply.code})`));
      } else {
        this.destroy(new ProtocolError(`${this.address} answered H with ${reply.kind}`));
      }
    },
    onLost: () => {},
  };

  #becomeReady(): void {
    this.#ready = true;
    this.#lastReceivedAt = this.#timers.clock.now();
    this.#silence?.received(this.#lastReceivedAt);
    this.#armKeepAlive();
    this.#armSilence();
    this.#listener.ready(this);
  }

  #onData(chunk: Uint8Array): void {
    this.#lastReceivedAt = this.#timers.clock.now();
    this.#receivedAny = true;
    if (this.#silence?.received(this.#lastReceivedAt)) {
      this.#listener.spoke(this);
      this.#armSilence();
    }
    const frames = this.#decoder.push(chunk);
    for (let i = 0; i < frames.length && !this.#closed; i++) {
      const frame = frames[i]!;
      if (isDecodeError(frame)) {
        this.destroy(
          new ProtocolError(`${this.address} sent a bad reply line: ${frame.code} ${frame.message}`),
        );
        return;
      }
      const ticket = this.#queue.match(frame);
      if (ticket !== undefined) {
        this.#silence?.settled(matchedAs(ticket.request.op) !== "A");
        ticket.handler.onReply(frame, ticket);
      } else this.#unmatched(frame);
    }
  }

  /** A reply to no outstanding request: a connection-level error line, or a server bug. */
  #unmatched(reply: Reply): void {
    if (this.#pushed(reply)) return;
    if (reply.kind === "E" && reply.op === "?") {
      if (reply.code === "AUTH_TIMEOUT") this.#error ??= new AuthError(`${this.address}: ${reply.message}`);
      // The server closes the connection after these; remember why for the requests it carried.
      if (FATAL_CODES.has(reply.code) || reply.code === "SHUTTING_DOWN") {
        this.#error ??= new LockServerError(reply.code, reply.message);
        return;
      }
    }
    this.destroy(new ProtocolError(`${this.address} sent a reply that answers no request: ${reply.kind}`));
  }

  /**
   * A push for a watched key (docs/protocol.md, "Matching replies", rule 6): an `O` state, or an
   * `M`/`E`/`S` for `O` that ended the watch. False for anything else, or a key nobody watches here.
   */
  #pushed(reply: Reply): boolean {
    const watchEnded = (reply.kind === "M" || reply.kind === "E" || reply.kind === "S") && reply.op === "O";
    if (reply.kind !== "O" && !watchEnded) return false;
    const listeners = this.#watches.get(reply.key);
    if (listeners === undefined) return false;
    if (watchEnded) this.#watches.delete(reply.key);
    for (const listener of [...listeners]) listener.pushed(reply);
    return true;
  }

  #armKeepAlive(): void {
    const interval = this.#options.keepAliveMs;
    if (interval === 0 || this.#closed) return;
    this.#keepAliveTimer = this.#timers.after(interval, () => {
      const silentFor = this.#timers.clock.now() - this.#lastReceivedAt;
      if (this.#pingOutstanding && silentFor >= interval) {
        this.destroy(new NoServerError(`${this.address} did not answer a ping within ${interval} ms`));
        return;
      }
      if (silentFor >= interval) this.#ping();
      this.#armKeepAlive();
    });
  }

  readonly #pong: ReplyHandler = {
    onReply: () => {
      this.#pingOutstanding = false;
    },
    onLost: () => {},
  };

  /** Sends a ping unless one is on its way already. */
  #ping(): void {
    if (this.#pingOutstanding) return;
    this.#pingOutstanding = true;
    this.send(new Ticket({ op: "P" }, this.#pong, undefined));
  }

  /** Keeps one timer at the silence watch's next check, while it has something to watch. */
  #armSilence(): void {
    if (this.#silenceTimer !== undefined || !this.#ready || this.#closed) return;
    // A single node (or two connections to it) has no one to move to: no pings, no probes.
    if (!this.#listener.hasAlternatives(this)) return;
    const due = this.#silence?.nextCheckAt();
    if (due !== undefined) this.#silenceTimer = this.#timers.at(due, this.#checkSilence);
  }

  readonly #checkSilence = (): void => {
    this.#silenceTimer = undefined;
    if (this.#silence === undefined || this.#closed) return;
    const verdict = this.#silence.check(this.#timers.clock.now());
    if (verdict === "ping") this.#ping();
    else if (verdict === "silent") this.#listener.silent(this);
    this.#armSilence();
  };

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ready = false;
    this.#connectTimer?.cancel();
    this.#keepAliveTimer?.cancel();
    this.#silenceTimer?.cancel();
    const error = this.#error ?? new NoServerError(`connection to ${this.address} closed`);
    this.#listener.closed(this, error);
    const watches = [...this.#watches.values()];
    this.#watches.clear();
    for (const listeners of watches) for (const listener of listeners) listener.ended();
    const { unwritten, written } = this.#queue.takeAll();
    for (const ticket of unwritten) ticket.handler.onLost(ticket, false, error);
    for (const ticket of written) ticket.handler.onLost(ticket, true, error);
  }
}

/** The handler of a request whose answer nobody needs (an `U` that ends a watch). */
const IGNORED: ReplyHandler = { onReply: () => {}, onLost: () => {} };
