import type { Timer, TimerQueue } from "./timer-queue.js";

/**
 * One timer on a TimerQueue, armed for the earliest time asked for since it last ran: asking for a
 * later time while an earlier one is pending changes nothing, asking for an earlier one moves it.
 * When it fires it is free again, so the callback (or anyone after it) may ask for the next time.
 * The client's reconnect, probe and search timers and the server's lease/wait timer are each one.
 */
export class EarliestTimer {
  readonly #timers: TimerQueue;
  readonly #callback: () => void;
  #timer: Timer | undefined;
  #at = Number.POSITIVE_INFINITY;

  constructor(timers: TimerQueue, callback: () => void) {
    this.#timers = timers;
    this.#callback = callback;
  }

  /** Runs the callback at `atMs` unless it already runs earlier; undefined asks for nothing. */
  schedule(atMs: number | undefined): void {
    if (atMs === undefined || atMs >= this.#at) return;
    this.#timer?.cancel();
    this.#at = atMs;
    this.#timer = this.#timers.at(atMs, this.#fire);
  }

  /** Drops the pending run, if any; the next `schedule` arms afresh. */
  cancel(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
    this.#callback();
  };
}
