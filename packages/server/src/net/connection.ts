import type { Socket } from "node:net";
import {
  type DecodeError,
  type ErrorCode,
  encodeReply,
  FATAL_CODES,
  formatAddress,
  isDecodeError,
  isPeerFrame,
  type ProtocolLimits,
  type Reply,
  type Request,
  RequestDecoder,
  type RequestOp,
} from "@lock/protocol";
import type { Cluster, IncomingConnection, PeerListener } from "../cluster/index.js";
import { endWithLinger } from "../io/close.js";
import { LockVerbs, type VerbContext } from "../session/lock-verbs.js";
import type { SecretChecker } from "./auth.js";
import { ReplyOutput } from "./reply-output.js";
import { RequestIntake } from "./request-intake.js";

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
 * Peer links arrive on the same port: the connection's peer frames go to its PeerListener (the
 * cluster's), which runs the peer handshake (begun before the connection ran any verb but `H`) and,
 * once the connection proved it is a peer, takes every line: it serves no lock verb from then on.
 * On a single node, which has no peers, a peer frame is answered BAD_SYNTAX like any unknown verb.
 */
export class ClientConnection {
  readonly #socket: Socket;
  readonly #output: ReplyOutput;
  /** Runs the client's requests in turns (RequestIntake). */
  readonly #intake: RequestIntake;
  readonly #ctx: ConnectionContext;
  readonly #decoder: RequestDecoder;
  /** The lock verbs, with this connection's queued acquires. */
  readonly #verbs: LockVerbs;
  #authenticated: boolean;
  #closing = false;
  #closed = false;
  /** Reading stopped for a handoff (`pauseReading`). */
  #readingPaused = false;
  #authTimer: NodeJS.Timeout | undefined;
  /** Ran a verb other than `H` (or sent a line that is none): it can no longer become a peer link. */
  #servedClient = false;
  /** The peer side of this connection, once a peer frame arrived on a cluster node. */
  #peer: PeerListener | undefined;

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
    this.#output = new ReplyOutput(socket, ctx.limits, {
      backlogged: () => socket.pause(),
      drained: () => {
        if (!this.#readingPaused) this.#intake.resume();
      },
      slowReader: (reason) => this.#closeSlowReader(reason),
    });
    this.#intake = new RequestIntake(socket, ctx.limits.maxRequestsPerTurn, {
      // After a stall this process may have been replaced as the active: check before serving a byte.
      beginRun: () => {
        this.#ctx.cluster?.guardGrants();
        this.#output.beginRun();
      },
      runPart: (part) => this.#runPart(part),
      endRun: () => {
        this.#peer?.endOfRead();
        this.#ctx.node.afterRequests();
        this.#output.endRun();
      },
      closing: () => this.#closing || this.#closed,
      held: () => this.#output.backlogged || this.#readingPaused,
    });
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
    return this.#closed ? 0 : this.#output.unsentBytes;
  }

  /** Reading stopped because the client does not read its replies. */
  get backlogged(): boolean {
    return this.#output.backlogged;
  }

  /** `host:port`, an IPv6 host in brackets (`[::1]:41000`) as in `--listen`, so it splits again. */
  get remoteAddress(): string {
    return formatAddress(this.#socket.remoteAddress ?? "unknown", this.#socket.remotePort ?? 0);
  }

  /**
   * Stops serving this connection: every queued acquire is answered with `code` (so the client
   * retries elsewhere), then the connection is closed once the replies are written.
   */
  shutdown(code: ErrorCode, message: string): void {
    if (this.#closing) return;
    this.#verbs.failPending(code, message);
    this.#closing = true;
    this.#output.flush();
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
    if (this.#peer?.engaged) return;
    this.#readingPaused = true;
    this.#socket.pause();
  }

  resumeReading(): void {
    this.#readingPaused = false;
    if (!this.#output.backlogged) this.#intake.resume();
  }

  /** Answers every queued acquire with a redirect to `address` and drops it (role change). */
  redirectPending(address: string | undefined): void {
    this.#verbs.redirectPending(address);
  }

  /** Bytes read from the client; `chunk` is only valid during the call. */
  receive(chunk: Buffer): void {
    if (!this.#closing) this.#intake.receive(chunk);
  }

  /** Decodes and runs the requests of one part of a read (RequestIntake); returns the frames run. */
  #runPart(part: Buffer): number {
    const frames = this.#decoder.push(part);
    // Only complete lines keep a connection from idling out: a line trickled a byte at a time
    // (slowloris) must still end within the idle timeout.
    if (frames.length > 0) this.#heard = true;
    for (const frame of frames) {
      if (this.#closing) break;
      if (isDecodeError(frame)) this.#replyDecodeError(frame);
      else if (!isPeerFrame(frame)) this.#handle(frame);
      else if (this.#ctx.cluster === undefined) this.#notClustered();
      else this.#peerListener(this.#ctx.cluster).frame(frame);
    }
    // Large replies (`I`, long keys) back up within a read: write them before running more.
    if (this.#output.queuedLength > this.#ctx.limits.writeHighWaterBytes) this.#output.flush();
    return frames.length;
  }

  #handle(request: Request): void {
    if (this.#peer?.request(request.op)) return;
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
    if (this.#ctx.auth === undefined) observer.authNotRequired?.(this.remoteAddress);
    else if (!this.#ctx.auth.matches(request.secret)) {
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
      this.#output.flush();
      // Read again (and drop) so a client that closes first is noticed at once.
      this.#socket.resume();
      endWithLinger(this.#socket);
    }, this.#ctx.limits.authFailureDelayMs);
  }

  #clearAuthTimer(): void {
    if (this.#authTimer) clearTimeout(this.#authTimer);
    this.#authTimer = undefined;
  }

  #notClustered(): void {
    this.#servedClient = true;
    this.#error("?", "-", undefined, "BAD_SYNTAX", "peer frames are only accepted by a cluster node");
  }

  /** The connection's peer side, made at its first peer frame (see the class comment). */
  #peerListener(cluster: Cluster): PeerListener {
    if (this.#peer) return this.#peer;
    const connection = this;
    const incoming: IncomingConnection = {
      remote: this.remoteAddress,
      get authenticated() {
        return connection.#authenticated;
      },
      get servedClient() {
        return connection.#servedClient;
      },
      get closing() {
        return connection.#closing;
      },
      send: (line) => {
        if (!this.#closed) this.#output.queue(line);
      },
      fail: (code, message) => this.#fail("?", "-", undefined, code, message),
      failAfterDelay: (code, message) => this.#failAfterDelay("?", code, message),
      close: () => this.#socket.destroy(),
      challenged: () => {
        if (this.#authTimer === undefined && this.#ctx.limits.authTimeoutMs > 0) {
          this.#authTimer = setTimeout(
            () => this.#fail("?", "-", undefined, "AUTH_TIMEOUT", "no peer proof before the auth timeout"),
            this.#ctx.limits.authTimeoutMs,
          );
        }
      },
      becamePeer: () => {
        this.#clearAuthTimer();
        this.#ctx.onAuthenticated(this);
      },
    };
    this.#peer = cluster.peerListener(incoming);
    return this.#peer;
  }

  #replyDecodeError(error: DecodeError): void {
    // A line meant as a peer frame never gets a field-by-field answer outside a peer link.
    const cluster = this.#ctx.cluster;
    if (this.#peer?.isLink) {
      this.#peer.undecodable(error);
      return;
    }
    if (error.peer && cluster !== undefined) {
      this.#peerListener(cluster).undecodable(error);
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
    this.#output.flush();
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
    this.#output.queue(encodeReply(reply));
    if (reply.kind === "E" && FATAL_CODES.has(reply.code)) this.#output.flush();
  }

  /**
   * A client that does not read its replies: closed at once, without waiting for them to be sent
   * (they never would be), so its memory is freed now. Its queued acquires are withdrawn; the
   * error line is queued last, and the client sees it only if it reads everything before it.
   */
  #closeSlowReader(message: string): void {
    if (this.#closed || this.#socket.destroyed) return;
    this.#closing = true;
    this.#intake.drop();
    this.#verbs.close();
    this.#ctx.node.observer.error("SLOW_READER");
    this.#output.writeLast(encodeReply({ kind: "E", op: "?", key: "-", code: "SLOW_READER", message }));
    this.#socket.destroy();
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearAuthTimer();
    this.#output.stop();
    this.#intake.drop();
    this.#verbs.close();
    this.#ctx.onClose(this);
  }
}
