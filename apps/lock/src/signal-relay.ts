import { FORWARDED_SIGNALS } from "./supervisor.js";

/**
 * Holds SIGINT, SIGTERM and SIGHUP for lock run's lifetime (so none of them kills lock while it
 * holds the lock): before the command starts, the first one aborts `abort`; from forwardTo() on,
 * each one is passed on (and `forwarded` remembers the first), until stopForwarding().
 */
export class SignalRelay {
  #controller = new AbortController();
  #forward: ((signal: NodeJS.Signals) => void) | undefined;
  received: NodeJS.Signals | undefined;
  forwarded: NodeJS.Signals | undefined;

  readonly #onSignal = (signal: NodeJS.Signals): void => {
    if (this.#forward !== undefined) {
      this.forwarded ??= signal;
      this.#forward(signal);
      return;
    }
    this.received ??= signal;
    this.#controller.abort(new Error(`interrupted by ${signal}`));
  };

  constructor() {
    for (const signal of FORWARDED_SIGNALS) process.on(signal, this.#onSignal);
  }

  get abort(): AbortSignal {
    return this.#controller.signal;
  }

  forwardTo(forward: (signal: NodeJS.Signals) => void): void {
    this.#forward = forward;
  }

  /** Back to waiting (the next campaign of --elect --recampaign): the next signal aborts a fresh `abort`. */
  stopForwarding(): void {
    this.#forward = undefined;
    this.#controller = new AbortController();
  }

  dispose(): void {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, this.#onSignal);
  }
}
