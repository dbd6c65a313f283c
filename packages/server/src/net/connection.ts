import type { Socket } from "node:net";
import {
  type DecodeError,
  type ErrorCode,
  encodeReply,
  FATAL_CODES,
  isDecodeError,
  isPeerFrame,
  type PeerFrame,
  type ProtocolLimits,
  type Reply,
  type Request,
  RequestDecoder,
  type RequestOp,
} from "@lock/protocol";
import { SocketWriter } from "@lock/socket-io";
import type { Cluster } from "../cluster/cluster.js";
import { PeerSession } from "../cluster/peer-session.js";
import type { SecretChecker } from "./auth.js";
import { endWithLinger } from "./close.js";
import { linesEnd } from "./line-budget.js";
import { LockVerbs, type VerbContext } from "./lock-verbs.js";
import type { ListenerHandshake } from "./peer-auth.js";

/** What every connection shares: the node, the limits and the server-wide facts for `I`. */
export interface ConnectionContext extends VerbContext {
  readonly protocolLimits: ProtocolLimits;
  readonly auth: SecretChecker | undefined;
  /** Set when this node is part of a cluster: peer links authenticate with it and feed it. */
  readonly cluster: Cluster | undefined;
  /** Called when the connection authenticates (with `H`, or as a peer link). */
  onAuthenticated(connection: ClientConnection): void;
  /** Called once when the connection is gone, whatever closed it. */
  onClose(connection: ClientConnection): void;
}

/**
 * One client connection: decodes pipelined requests, runs them against the node, and writes
 * replies in batches (one socket write per event-loop turn). Replies to queued acquires arrive
 * later through `AcquireSink`, in any order relative to other replies.
 *
 * Turns: at most `maxRequestsPerTurn` requests run in one event-loop turn; the rest of the bytes
 * wait (reading paused) for the next turn, so one client's pipeline cannot hold up the others.
 *
 * Backpressure: when the client stops reading and the unsent replies pass `writeHighWaterBytes`
 * (checked between parts of a chunk, not only after it), the connection stops running and reading
 * requests until the socket drains, so a client that never reads cannot grow the server's memory.
 * Unsent replies past `maxUnsentBytes`, or not all written within `writeTimeoutMs` of passing the
 * mark, close the connection at once (`SLOW_READER`), queued acquires included.
 *
 * Peer links arrive on the same port. A connection becomes one only through the peer handshake
 * (`ListenerHandshake`), begun before it ran any verb but `H`; from then on its frames go to its
 * PeerSession and it serves no lock verb. Any other peer frame is refused with
 * PEER_NOT_AUTHENTICATED and closes the connection (on a single node, which has no peers, it is
 * answered BAD_SYNTAX like any unknown verb).
 */
export class ClientConnection {
  readonly #socket: Socket;
  readonly #writer: SocketWriter;
  readonly #ctx: ConnectionContext;
  readonly #decoder: RequestDecoder;
  /** The lock verbs, with this connection's queued acquires. */
  readonly #verbs: LockVerbs;
  #authenticated: boolean;
  #out = "";
  #flushScheduled = false;
  /** Inside `receive()`, which writes everything at its end: no tick needs scheduling meanwhile. */
  #receiving = false;
  #closing = false;
  #closed = false;
  /** Reading stopped because unsent replies passed the high-water mark. */
  #writesBacklogged = false;
  /** Closes the connection if its backlog has not drained by then (`writeTimeoutMs`). */
  #writeTimer: NodeJS.Timeout | undefined;
  /** Bytes received but not run yet: a turn's request budget ran out, or replies backed up. */
  #unread: Buffer | undefined;
  #nextTurnScheduled = false;
  /** Reading stopped for a handoff (`pauseReading`). */
  #readingPaused = false;
  #authTimer: NodeJS.Timeout | undefined;
  /** Ran a verb other than `H` (or sent a line that is none): it can no longer become a peer link. */
  #servedClient = false;
  /** The peer handshake, once a peer frame arrived on a cluster node. */
  #handshake: ListenerHandshake | undefined;
  /** Set once the connection proved it is a peer: every line goes to it from then on. */
  #peerLink: PeerSession | undefined;

  /**
   * `reads`: "events" subscribes to the socket's 'data' (TLS); "external" means the caller passes
   * each chunk to `receive()` (plain TCP read into a shared buffer, see @lock/socket-io).
   */
  constructor(socket: Socket, ctx: ConnectionContext, reads: "events" | "external" = "events") {
    this.#socket = socket;
    this.#ctx = ctx;
    this.#decoder = new RequestDecoder(ctx.protocolLimits);
    this.#verbs = new LockVerbs(ctx, (reply) => this.#send(reply), this.remoteAddress);
    this.#authenticated = ctx.auth === undefined;
    socket.setNoDelay(true);
    this.#writer = new SocketWriter(socket, () => this.#drained());
    if (reads === "events") socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.on("error", () => {
      // A reset or broken pipe: 'close' follows and cleans up.
    });
    socket.on("close", () => this.#onClose());
    if (!this.#authenticated && ctx.limits.authTimeoutMs > 0) {
      this.#authTimer = setTimeout(
        () => this.#fail("?", "-", undefined, "AUTH_TIMEOUT", "no successful H before the auth timeout"),
        ctx.limits.authTimeoutMs,
      );
    }
  }

  /** A complete line arrived since the last idle sweep (a new connection counts as active). */
  #heard = true;
  /** Idle sweeps in a row that found nothing received and no acquire queued. */
  #quietSweeps = 0;

  /** Queued acquires of this connection. */
  get pendingCount(): number {
    return this.#verbs.pending;
  }

  /** Reply bytes produced and not yet handed to the kernel (0 once closed). */
  get unsentBytes(): number {
    return this.#closed ? 0 : this.#out.length + this.#writer.queuedBytes;
  }

  /** Reading stopped because the client does not read its replies. */
  get backlogged(): boolean {
    return this.#writesBacklogged;
  }

  get remoteAddress(): string {
    return `${this.#socket.remoteAddress}:${this.#socket.remotePort}`;
  }

  /**
   * Stops serving this connection: every queued acquire is answered with `code` (so the client
   * retries elsewhere), then the connection is closed once the replies are written.
   */
  shutdown(code: ErrorCode, message: string): void {
    if (this.#closing) return;
    this.#verbs.failPending(code, message);
    this.#closing = true;
    this.#flush();
    this.#socket.end();
  }

  /** Sends a connection-level error line (`E ? - <code>`), then closes (the server evicting it). */
  closeWithError(code: ErrorCode, message: string): void {
    this.#fail("?", "-", undefined, code, message);
  }

  /**
   * A newer connection took this unauthenticated one's slot (Admission). `immediately`: the slot is
   * needed now, so the socket is destroyed right after the error line is handed to the kernel
   * instead of lingering for the client's close.
   */
  evict(immediately: boolean): void {
    this.closeWithError(
      "TOO_MANY_UNAUTHENTICATED",
      "a newer connection took this slot before this one authenticated",
    );
    if (immediately) this.#socket.destroy();
  }

  /** Closes at once, without replies (server stop after the shutdown grace). */
  destroy(): void {
    this.#socket.destroy();
  }

  /** Stops reading requests (during a handoff); peer links, and handshakes, keep flowing. */
  pauseReading(): void {
    if (this.#peerLink !== undefined || this.#handshake !== undefined) return;
    this.#readingPaused = true;
    this.#socket.pause();
  }

  resumeReading(): void {
    this.#readingPaused = false;
    if (!this.#writesBacklogged) this.#resumeIntake();
  }

  /** Answers every queued acquire with a redirect to `address` and drops it (role change). */
  redirectPending(address: string): void {
    this.#verbs.redirectPending(address);
  }

  /** Bytes read from the client; `chunk` is only valid during the call. */
  receive(chunk: Buffer): void {
    if (this.#closing) return;
    if (this.#unread !== undefined) {
      // Read before the pause took hold: it runs after what is already waiting.
      this.#unread = Buffer.concat([this.#unread, chunk]);
      return;
    }
    this.#run(chunk);
  }

  /**
   * Runs the requests in `bytes`: at most `maxRequestsPerTurn`, and none once the replies back up.
   * What is left is kept (copied) with reading paused, and runs in a later turn.
   */
  #run(bytes: Buffer): void {
    // After a stall this process may have been replaced as the active: check before serving a byte.
    this.#ctx.cluster?.guardStall();
    const { maxRequestsPerTurn, writeHighWaterBytes } = this.#ctx.limits;
    let budget = maxRequestsPerTurn;
    let start = 0;
    this.#receiving = true;
    try {
      while (start < bytes.length && budget > 0 && !this.#writesBacklogged && !this.#closing) {
        const end = linesEnd(bytes, start, budget);
        const frames = this.#decoder.push(bytes.subarray(start, end));
        start = end;
        budget -= frames.length;
        this.#runFrames(frames);
        // Large replies (`I`, long keys) back up within a chunk: write them before running more.
        if (this.#out.length > writeHighWaterBytes) this.#flush();
      }
      this.#peerLink?.flushAcks();
      this.#ctx.node.afterRequests();
    } finally {
      this.#receiving = false;
    }
    // Answer the whole part with one write now rather than a tick later: one hop less per round trip.
    this.#flush();
    if (start < bytes.length && !this.#closing) this.#keepUnread(bytes.subarray(start));
  }

  #runFrames(frames: ReadonlyArray<Request | PeerFrame | DecodeError>): void {
    // Only complete lines keep a connection from idling out: a line trickled a byte at a time
    // (slowloris) must still end within the idle timeout.
    if (frames.length > 0) this.#heard = true;
    for (const frame of frames) {
      if (this.#closing) break;
      if (isDecodeError(frame)) this.#replyDecodeError(frame);
      else if (isPeerFrame(frame)) this.#handlePeerFrame(frame);
      else this.#handle(frame);
    }
  }

  /** Stops reading and keeps `rest` (at most one read's worth) until the connection may run it. */
  #keepUnread(rest: Buffer): void {
    this.#unread = Buffer.from(rest);
    this.#socket.pause();
    if (!this.#writesBacklogged && !this.#readingPaused) this.#scheduleNextTurn();
  }

  /** Reading may go on (drained, or a handoff's pause ended): run what was kept, then read again. */
  #resumeIntake(): void {
    if (this.#unread !== undefined) this.#scheduleNextTurn();
    else if (!this.#closing) this.#socket.resume();
  }

  #scheduleNextTurn(): void {
    if (this.#nextTurnScheduled) return;
    this.#nextTurnScheduled = true;
    // setImmediate, not a microtask or nextTick: other connections' reads and timers run first.
    setImmediate(this.#nextTurn);
  }

  readonly #nextTurn = (): void => {
    this.#nextTurnScheduled = false;
    if (this.#closed || this.#closing || this.#writesBacklogged || this.#readingPaused) return;
    const unread = this.#unread;
    this.#unread = undefined;
    if (unread !== undefined) this.#run(unread);
    if (this.#unread === undefined && !this.#writesBacklogged && !this.#readingPaused && !this.#closing)
      this.#socket.resume();
  };

  #handle(request: Request): void {
    if (this.#peerLink) {
      this.#peerLink.refuse(`a ${request.op} request on a peer link`);
      return;
    }
    if (request.op !== "H") this.#servedClient = true;
    const observer = this.#ctx.node.observer;
    observer.request(request.op);
    if (!this.#authenticated && request.op !== "H" && request.op !== "P") {
      const key = "key" in request ? request.key : "-";
      const id = "id" in request ? request.id : undefined;
      this.#error(request.op, key, id, "NOT_AUTHENTICATED", "authenticate first with H <secret>");
      return;
    }
    if (request.op !== "H") {
      this.#verbs.run(request);
      return;
    }
    if (this.#ctx.auth !== undefined && !this.#ctx.auth.matches(request.secret)) {
      this.#refuseSecret();
      return;
    }
    this.#authenticated = true;
    this.#clearAuthTimer();
    this.#ctx.onAuthenticated(this);
    this.#send({ kind: "H" });
  }

  /**
   * A wrong secret: nothing more is read or run, `AUTH_FAILED` comes only after
   * `authFailureDelayMs`, and then the connection closes. Guessing costs a connection and the delay
   * per try, where it used to cost one line.
   */
  #refuseSecret(): void {
    this.#ctx.node.observer.authFailed(this.remoteAddress);
    this.#failAfterDelay("H", "AUTH_FAILED", "wrong secret");
  }

  /** `#fail` after `authFailureDelayMs`, reading and running nothing meanwhile (a failed authentication). */
  #failAfterDelay(op: RequestOp | "?", code: ErrorCode, message: string): void {
    // Closing from now on: later input is dropped, and no other close (idle, eviction) cuts the delay short.
    this.#closing = true;
    this.#socket.pause();
    this.#verbs.close();
    this.#clearAuthTimer();
    this.#authTimer = setTimeout(() => {
      this.#error(op, "-", undefined, code, message);
      this.#flush();
      // Read again (and drop) so a client that closes first is noticed at once.
      this.#socket.resume();
      endWithLinger(this.#socket);
    }, this.#ctx.limits.authFailureDelayMs);
  }

  #clearAuthTimer(): void {
    if (this.#authTimer) clearTimeout(this.#authTimer);
    this.#authTimer = undefined;
  }

  #handlePeerFrame(frame: PeerFrame): void {
    const cluster = this.#ctx.cluster;
    if (cluster === undefined) {
      this.#servedClient = true;
      this.#error("?", "-", undefined, "BAD_SYNTAX", "peer frames are only accepted by a cluster node");
      return;
    }
    if (this.#peerLink) {
      this.#peerLink.receive(frame);
      return;
    }
    if (!this.#authenticated) {
      this.#refusePeer("PEER_NOT_AUTHENTICATED", "peer frame before H: authenticate with H first");
      return;
    }
    if (this.#servedClient) {
      this.#refusePeer("PEER_NOT_AUTHENTICATED", "peer frame on a connection that ran client verbs");
      return;
    }
    this.#handshake ??= cluster.listenerHandshake();
    const step = this.#handshake.step(frame);
    switch (step.kind) {
      case "challenge":
        this.#queue(step.line);
        if (this.#authTimer === undefined && this.#ctx.limits.authTimeoutMs > 0) {
          this.#authTimer = setTimeout(
            () => this.#fail("?", "-", undefined, "AUTH_TIMEOUT", "no peer proof before the auth timeout"),
            this.#ctx.limits.authTimeoutMs,
          );
        }
        return;
      case "authenticated":
        this.#clearAuthTimer();
        this.#queue(step.line);
        this.#peerLink = new PeerSession(step.node, cluster, {
          send: (line) => {
            if (!this.#closed) this.#queue(line);
          },
          drop: (message) => this.#fail("?", "-", undefined, "PEER_PROTOCOL_ERROR", message),
          close: () => this.#socket.destroy(),
        });
        this.#ctx.onAuthenticated(this);
        return;
      case "refused":
        this.#refusePeer(step.code, step.reason, step.node);
        return;
    }
  }

  /**
   * Refuses a connection that is not an authenticated peer link: reported (rate-limited) and
   * closed. A failed proof is answered only after the auth failure delay, like a wrong `H`.
   */
  #refusePeer(code: "PEER_NOT_AUTHENTICATED" | "PEER_AUTH_FAILED", reason: string, node?: string): void {
    if (this.#closing) return;
    this.#ctx.cluster?.rejected(this.remoteAddress, node, reason);
    if (code === "PEER_AUTH_FAILED") this.#failAfterDelay("?", code, reason);
    else this.#fail("?", "-", undefined, code, reason);
  }

  #replyDecodeError(error: DecodeError): void {
    if (this.#peerLink) {
      this.#peerLink.refuse(`${error.code}: ${error.message}`);
      return;
    }
    // A line meant as a peer frame never gets a field-by-field answer outside a peer link.
    if (error.peer && this.#ctx.cluster !== undefined) {
      this.#refusePeer("PEER_NOT_AUTHENTICATED", `malformed peer frame (${error.code})`);
      return;
    }
    this.#servedClient = true;
    this.#error(error.op, error.key, error.id, error.code, error.message);
  }

  #error(op: RequestOp | "?", key: string, id: string | undefined, code: ErrorCode, message: string): void {
    this.#verbs.error(op, key, id, code, message);
  }

  /** Sends a connection-ending error and closes once it is written. */
  #fail(op: RequestOp | "?", key: string, id: string | undefined, code: ErrorCode, message: string): void {
    if (this.#closing) return;
    this.#error(op, key, id, code, message);
    this.#verbs.close();
    this.#closing = true;
    this.#flush();
    endWithLinger(this.#socket);
  }

  /**
   * The server's idle sweep, every half idle timeout: two quiet sweeps after the last one that saw
   * a complete line close the connection, between 1 and 1.5 idle timeouts after it. A flag instead
   * of a timestamp keeps the clock off the path of every read. A client waiting for a lock is never idle.
   */
  sweepIdle(): void {
    if (this.#heard || this.#verbs.pending > 0) {
      this.#heard = false;
      this.#quietSweeps = 0;
      return;
    }
    if (++this.#quietSweeps < 2) return;
    this.#fail("?", "-", undefined, "IDLE_TIMEOUT", "no request for the idle timeout");
  }

  #send(reply: Reply): void {
    if (this.#closed) return;
    this.#queue(encodeReply(reply));
    if (reply.kind === "E" && FATAL_CODES.has(reply.code)) this.#flush();
  }

  /** Adds to the next write: at the end of `receive()` if inside it, else at the end of this tick. */
  #queue(text: string): void {
    this.#out += text;
    if (this.#flushScheduled || this.#receiving) return;
    this.#flushScheduled = true;
    process.nextTick(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    if (this.#out.length === 0 || this.#closed) return;
    const out = this.#out;
    this.#out = "";
    // Only a write that returned false is followed by a drain, so only then may reading stop.
    if (this.#writer.write(out)) return;
    const unsent = this.#writer.queuedBytes;
    const { writeHighWaterBytes, maxUnsentBytes, writeTimeoutMs } = this.#ctx.limits;
    if (unsent > maxUnsentBytes) {
      this.#closeSlowReader(`more than ${maxUnsentBytes} bytes of replies unread`);
    } else if (unsent > writeHighWaterBytes && !this.#writesBacklogged) {
      this.#writesBacklogged = true;
      this.#socket.pause();
      if (writeTimeoutMs > 0) {
        this.#writeTimer = setTimeout(
          () => this.#closeSlowReader(`replies unread for ${writeTimeoutMs / 1000} s`),
          writeTimeoutMs,
        );
      }
    }
  };

  /**
   * A client that does not read its replies: closed at once, without waiting for them to be sent
   * (they never would be), so its memory is freed now. Its queued acquires are withdrawn; the
   * error line is queued last, and the client sees it only if it reads everything before it.
   */
  #closeSlowReader(message: string): void {
    if (this.#closed || this.#socket.destroyed) return;
    this.#closing = true;
    this.#unread = undefined;
    this.#verbs.close();
    this.#ctx.node.observer.error("SLOW_READER");
    const line = encodeReply({ kind: "E", op: "?", key: "-", code: "SLOW_READER", message });
    this.#writer.write(this.#out + line);
    this.#out = "";
    this.#socket.destroy();
  }

  /** Every reply written so far has reached the kernel. */
  #drained(): void {
    if (!this.#writesBacklogged) return;
    this.#writesBacklogged = false;
    this.#clearWriteTimer();
    if (!this.#readingPaused) this.#resumeIntake();
  }

  #clearWriteTimer(): void {
    if (this.#writeTimer) clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearAuthTimer();
    this.#clearWriteTimer();
    this.#unread = undefined;
    this.#verbs.close();
    this.#ctx.onClose(this);
  }
}
