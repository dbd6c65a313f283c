import type { Socket } from "node:net";
import { linesEnd } from "./line-budget.js";

/** The connection behind an intake: it runs requests and says when it may not run more. */
export interface IntakeHost {
  /** Starts a run of requests (in one event-loop turn). */
  beginRun(): void;
  /** Decodes and runs the requests in `part`; returns how many frames it ran. */
  runPart(part: Buffer): number;
  /** Ends the run: writes its replies. */
  endRun(): void;
  /** The connection is closing: what is left is dropped. */
  closing(): boolean;
  /** Nothing may run now (replies backed up, or a handoff): what is left waits for `resume()`. */
  held(): boolean;
}

/**
 * Feeds a connection's bytes to its requests in turns: at most `maxRequestsPerTurn` requests run
 * in one event-loop turn, and none while the host is held. What is left is copied (at most one
 * read's worth), reading pauses, and it runs in a later turn (setImmediate: other connections'
 * reads and timers go first) or on `resume()`; reading resumes once nothing is left.
 *
 * The budget is the turn's, not each read's: one poll of the event loop may hand a busy socket up
 * to 32 reads of 64 KiB, and with lines longer than 64 bytes a read holds fewer than 1024 of them,
 * so a budget per read never paused (a standby receiving a 5M-holder snapshot with client-style
 * request ids ran about 30,000 frames per turn: 150–250 ms turns for 20 s).
 */
export class RequestIntake {
  readonly #socket: Socket;
  readonly #maxRequestsPerTurn: number;
  readonly #host: IntakeHost;
  /** Bytes received but not run yet. */
  #unread: Buffer | undefined;
  #nextTurnScheduled = false;
  /** Requests run in this event-loop turn, over all its reads; zeroed once the turn is over. */
  #ranThisTurn = 0;
  #turnEndScheduled = false;

  constructor(socket: Socket, maxRequestsPerTurn: number, host: IntakeHost) {
    this.#socket = socket;
    this.#maxRequestsPerTurn = maxRequestsPerTurn;
    this.#host = host;
  }

  /** Bytes read from the client; `chunk` is only valid during the call. */
  receive(chunk: Buffer): void {
    if (this.#unread !== undefined) {
      // Read before the pause took hold: it runs after what is already waiting.
      this.#unread = Buffer.concat([this.#unread, chunk]);
      return;
    }
    this.#run(chunk);
  }

  /** The host may run requests again (drained, or a handoff's pause ended). */
  resume(): void {
    if (this.#unread !== undefined) this.#scheduleNextTurn();
    else if (!this.#host.closing()) this.#socket.resume();
  }

  /** The connection closed: nothing more runs. */
  drop(): void {
    this.#unread = undefined;
  }

  #run(bytes: Buffer): void {
    const host = this.#host;
    let start = 0;
    if (!this.#turnEndScheduled) {
      // Before any next turn is scheduled below: it then starts with the whole budget.
      this.#turnEndScheduled = true;
      setImmediate(this.#turnEnded);
    }
    host.beginRun();
    try {
      while (start < bytes.length && this.#budget() > 0 && !host.closing() && !host.held()) {
        const end = linesEnd(bytes, start, this.#budget());
        this.#ranThisTurn += host.runPart(bytes.subarray(start, end));
        start = end;
      }
    } finally {
      host.endRun();
    }
    if (start < bytes.length && !host.closing()) {
      this.#unread = Buffer.from(bytes.subarray(start));
      this.#socket.pause();
      if (!host.held()) this.#scheduleNextTurn();
    }
  }

  #budget(): number {
    return this.#maxRequestsPerTurn - this.#ranThisTurn;
  }

  readonly #turnEnded = (): void => {
    this.#turnEndScheduled = false;
    this.#ranThisTurn = 0;
  };

  #scheduleNextTurn(): void {
    if (this.#nextTurnScheduled) return;
    this.#nextTurnScheduled = true;
    setImmediate(this.#nextTurn);
  }

  readonly #nextTurn = (): void => {
    this.#nextTurnScheduled = false;
    const host = this.#host;
    if (host.closing() || host.held()) return;
    const unread = this.#unread;
    this.#unread = undefined;
    if (unread !== undefined) this.#run(unread);
    if (this.#unread === undefined && !host.closing() && !host.held()) this.#socket.resume();
  };
}
