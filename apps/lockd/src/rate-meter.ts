/**
 * Grants per second for `/status`: samples a monotonically growing counter once a second and
 * reports the average over the last `windowSeconds`.
 */
export class RateMeter {
  readonly #read: () => number;
  readonly #samples: Array<{ at: number; value: number }> = [];
  readonly #windowSeconds: number;
  readonly #timer: NodeJS.Timeout;

  constructor(read: () => number, windowSeconds = 10) {
    this.#read = read;
    this.#windowSeconds = windowSeconds;
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), 1000);
    this.#timer.unref();
  }

  perSecond(): number {
    const first = this.#samples[0];
    if (!first) return 0;
    const now = performance.now();
    const elapsed = (now - first.at) / 1000;
    return elapsed > 0 ? (this.#read() - first.value) / elapsed : 0;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sample(): void {
    this.#samples.push({ at: performance.now(), value: this.#read() });
    if (this.#samples.length > this.#windowSeconds) this.#samples.shift();
  }
}
