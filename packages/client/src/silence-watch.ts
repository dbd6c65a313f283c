/**
 * Whether one connection's server has gone quiet while it owes replies, as a pure unit: the
 * connection reports what it sent, what was answered and when bytes arrived; `check` says what to do.
 * No timers and no sockets; time comes in as arguments.
 *
 * A stopped process (SIGSTOP, a VM pause) or a black-holed link closes nothing: the socket stays
 * open and simply stays quiet. Only silence tells, and only silence while something is owed:
 * - a request that lockd answers at once (everything but an acquire, which may queue) is owed
 *   promptly: once such a request is outstanding and nothing at all has arrived for `timeoutMs`,
 *   the connection is **silent** (reported once, until bytes arrive again);
 * - an acquire may wait for its grant as long as it likes, so a connection that carries only
 *   waiting acquires and has been quiet for `timeoutMs` is **pinged** instead: the ping is owed
 *   promptly, so a server that does not answer it is silent one `timeoutMs` later.
 * Any byte received proves the server runs, whatever it answers.
 */
export type SilenceVerdict = "fine" | "ping" | "silent";

export class SilenceWatch {
  readonly #timeoutMs: number;
  #prompt = 0;
  #waiting = 0;
  /** When the prompt count last went from 0 to 1. */
  #promptSince = Number.NaN;
  #lastReceivedAt: number;
  #reported = false;

  constructor(timeoutMs: number, nowMs: number) {
    this.#timeoutMs = timeoutMs;
    this.#lastReceivedAt = nowMs;
  }

  /** True once `check` said silent and no byte has arrived since. */
  get silent(): boolean {
    return this.#reported;
  }

  /** A request went out; `prompt`: the server answers it at once (anything but an acquire). */
  sent(prompt: boolean, nowMs: number): void {
    if (!prompt) this.#waiting += 1;
    else if (this.#prompt++ === 0) this.#promptSince = nowMs;
  }

  /** A request sent earlier was answered or taken back. */
  settled(prompt: boolean): void {
    if (prompt) this.#prompt = Math.max(0, this.#prompt - 1);
    else this.#waiting = Math.max(0, this.#waiting - 1);
  }

  /** Bytes arrived. True if the connection had been reported silent: the server spoke again. */
  received(nowMs: number): boolean {
    this.#lastReceivedAt = nowMs;
    const wasSilent = this.#reported;
    this.#reported = false;
    return wasSilent;
  }

  /** When `check` may first say something other than fine; undefined: nothing to watch. */
  nextCheckAt(): number | undefined {
    if (this.#reported) return undefined;
    // Owed since the later of the oldest prompt request's send and the last byte received: a busy
    // connection that keeps answering is never silent, however long one request takes.
    if (this.#prompt > 0) return Math.max(this.#lastReceivedAt, this.#promptSince) + this.#timeoutMs;
    if (this.#waiting > 0) return this.#lastReceivedAt + this.#timeoutMs;
    return undefined;
  }

  /**
   * What to do now: `silent` once (then fine until bytes arrive), `ping` while only waiting
   * acquires are owed and the connection is quiet (the caller sends one, which is owed promptly).
   */
  check(nowMs: number): SilenceVerdict {
    const due = this.nextCheckAt();
    if (due === undefined || nowMs < due) return "fine";
    if (this.#prompt > 0) {
      this.#reported = true;
      return "silent";
    }
    return "ping";
  }
}
