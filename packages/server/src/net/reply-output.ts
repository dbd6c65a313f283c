import type { Socket } from "node:net";
import { SocketWriter } from "@lock/socket-io";
import type { ServerLimits } from "../limits.js";

type OutputLimits = Pick<ServerLimits, "writeHighWaterBytes" | "maxUnsentBytes" | "writeTimeoutMs">;

/** What the connection does when its client falls behind on reading. */
export interface OutputEvents {
  /** Unsent replies passed `writeHighWaterBytes`: stop reading requests. */
  backlogged(): void;
  /** Every reply has reached the kernel again after `backlogged`: reading may resume. */
  drained(): void;
  /** Unsent replies passed `maxUnsentBytes`, or stayed backlogged for `writeTimeoutMs`. */
  slowReader(reason: string): void;
}

/**
 * Flushes put off to the end of the tick, by every connection: a run of requests that changes it
 * queued replies on other connections (grants it handed over).
 */
let deferredFlushes = 0;

/**
 * One connection's replies on their way out: batched into one socket write per event-loop turn
 * (or per run of requests, `hold`/`flush`), with the limits on a client that does not read them.
 * Over `writeHighWaterBytes` unsent it reports `backlogged` (the connection stops reading) and
 * `drained` once all of it was written; past `maxUnsentBytes`, or when the backlog does not drain
 * within `writeTimeoutMs`, it reports `slowReader` (the connection closes).
 */
export class ReplyOutput {
  readonly #writer: SocketWriter;
  readonly #limits: OutputLimits;
  readonly #events: OutputEvents;
  #out = "";
  #flushScheduled = false;
  /** Inside a run of requests, which flushes at its end: no tick needs scheduling meanwhile. */
  #held = false;
  /** `deferredFlushes` when the run began. */
  #deferredAtHold = 0;
  #backlogged = false;
  #stopped = false;
  #writeTimer: NodeJS.Timeout | undefined;

  constructor(socket: Socket, limits: OutputLimits, events: OutputEvents) {
    this.#limits = limits;
    this.#events = events;
    this.#writer = new SocketWriter(socket, () => this.#drained());
  }

  /** Reply bytes produced and not yet handed to the kernel (0 once stopped). */
  get unsentBytes(): number {
    return this.#stopped ? 0 : this.#out.length + this.#writer.queuedBytes;
  }

  /** Unsent replies passed the high-water mark and have not drained since. */
  get backlogged(): boolean {
    return this.#backlogged;
  }

  /** Replies queued in this turn and not written yet. */
  get queuedLength(): number {
    return this.#out.length;
  }

  /** Adds to the next write: at the end of the current run if held, else at the end of this tick. */
  queue(text: string): void {
    this.#out += text;
    if (this.#flushScheduled || this.#held) return;
    this.#flushScheduled = true;
    deferredFlushes += 1;
    process.nextTick(this.flush);
  }

  /** Starts a run of requests: replies wait for `endRun()` instead of a tick. */
  beginRun(): void {
    this.#held = true;
    this.#deferredAtHold = deferredFlushes;
  }

  /**
   * Ends the run: one write for all of its replies, now (a tick later would be one hop more per
   * round trip), unless the run handed grants to other connections: then after theirs, at the end
   * of this tick. A grant is what its waiter and the key's next hand-off wait for; the run's own
   * replies (a release's `R`) are not, so the grant's write goes first.
   */
  endRun(): void {
    this.#held = false;
    if (deferredFlushes === this.#deferredAtHold) this.flush();
    else if (!this.#flushScheduled && this.#out.length > 0) {
      this.#flushScheduled = true;
      process.nextTick(this.flush);
    }
  }

  readonly flush = (): void => {
    this.#flushScheduled = false;
    if (this.#out.length === 0 || this.#stopped) return;
    const out = this.#out;
    this.#out = "";
    // Only a write that returned false is followed by a drain, so only then may reading stop.
    if (this.#writer.write(out)) return;
    const unsent = this.#writer.queuedBytes;
    const { writeHighWaterBytes, maxUnsentBytes, writeTimeoutMs } = this.#limits;
    if (unsent > maxUnsentBytes) {
      this.#events.slowReader(`more than ${maxUnsentBytes} bytes of replies unread`);
    } else if (unsent > writeHighWaterBytes && !this.#backlogged) {
      this.#backlogged = true;
      this.#events.backlogged();
      if (writeTimeoutMs > 0) {
        this.#writeTimer = setTimeout(
          () => this.#events.slowReader(`replies unread for ${writeTimeoutMs / 1000} s`),
          writeTimeoutMs,
        );
      }
    }
  };

  /** Writes what is queued and `last` behind it, then nothing more (the socket is being destroyed). */
  writeLast(last: string): void {
    this.#writer.write(this.#out + last);
    this.stop();
  }

  /** The connection closed: drop what is queued and the timer. */
  stop(): void {
    this.#stopped = true;
    this.#out = "";
    this.#clearWriteTimer();
  }

  #drained(): void {
    if (!this.#backlogged) return;
    this.#backlogged = false;
    this.#clearWriteTimer();
    this.#events.drained();
  }

  #clearWriteTimer(): void {
    if (this.#writeTimer) clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
  }
}
