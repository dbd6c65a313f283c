/** What the history samples each second: monotonically growing counters and two gauges. */
export interface SampleSource {
  grants(): number;
  /** Grants a standby applied from the active's stream (0 on a single node). */
  replicatedGrants(): number;
  handoffs(): number;
  keysHeld(): number;
  waiters(): number;
}

/** One second of history, as `GET /history` returns it. */
export interface HistoryPoint {
  /** Wall-clock time (ms since 1970) at the end of the interval. */
  readonly at: number;
  readonly grantsPerSecond: number;
  /**
   * While this node was a standby: the active's grants it replicated, so a standby's chart shows
   * the cluster's activity, and it keeps that history when it becomes the active.
   */
  readonly replicatedGrantsPerSecond: number;
  readonly handoffsPerSecond: number;
  readonly keysHeld: number;
  readonly waiters: number;
}

interface Sample {
  /** Monotonic time, for rates; immune to wall-clock steps. */
  readonly monotonicMs: number;
  readonly wallMs: number;
  readonly grants: number;
  readonly replicatedGrants: number;
  readonly handoffs: number;
  readonly keysHeld: number;
  readonly waiters: number;
}

/** 5 minutes at one sample a second. */
export const HISTORY_SAMPLES = 300;

/**
 * A server-side ring of samples (one a second, the last `capacity`), so the status page draws the
 * last minutes at once, and a reload keeps them. Also the grants/s figure of `/status`. Pure: the
 * caller samples (lockd: a one-second interval timer), and tests call `sample` with their own times.
 * Memory is fixed: `capacity` + 1 samples of seven numbers.
 */
export class StatusHistory {
  readonly #source: SampleSource;
  readonly #ring: Sample[] = [];
  readonly #capacity: number;
  #next = 0;

  constructor(source: SampleSource, capacity = HISTORY_SAMPLES) {
    this.#source = source;
    // One more than the points shown: a rate needs the sample before it.
    this.#capacity = capacity + 1;
  }

  sample(monotonicMs: number, wallMs: number): void {
    const source = this.#source;
    const sample: Sample = {
      monotonicMs,
      wallMs,
      grants: source.grants(),
      replicatedGrants: source.replicatedGrants(),
      handoffs: source.handoffs(),
      keysHeld: source.keysHeld(),
      waiters: source.waiters(),
    };
    if (this.#ring.length < this.#capacity) this.#ring.push(sample);
    else this.#ring[this.#next] = sample;
    this.#next = (this.#next + 1) % this.#capacity;
  }

  /** The samples, oldest first. */
  #ordered(): Sample[] {
    if (this.#ring.length < this.#capacity) return this.#ring;
    return [...this.#ring.slice(this.#next), ...this.#ring.slice(0, this.#next)];
  }

  /** Rates between consecutive samples, oldest first. */
  points(): HistoryPoint[] {
    const samples = this.#ordered();
    const points: HistoryPoint[] = [];
    for (let i = 1; i < samples.length; i++) {
      const before = samples[i - 1]!;
      const after = samples[i]!;
      const seconds = (after.monotonicMs - before.monotonicMs) / 1000;
      if (seconds <= 0) continue;
      points.push({
        at: after.wallMs,
        grantsPerSecond: round1((after.grants - before.grants) / seconds),
        replicatedGrantsPerSecond: round1((after.replicatedGrants - before.replicatedGrants) / seconds),
        handoffsPerSecond: round1((after.handoffs - before.handoffs) / seconds),
        keysHeld: after.keysHeld,
        waiters: after.waiters,
      });
    }
    return points;
  }

  /** Grants per second over the last `windowSeconds` samples, up to `nowMs` (monotonic). */
  grantsPerSecond(nowMs: number, windowSeconds = 10): number {
    const samples = this.#ordered();
    const first = samples[Math.max(0, samples.length - windowSeconds)];
    if (first === undefined) return 0;
    const seconds = (nowMs - first.monotonicMs) / 1000;
    return seconds > 0 ? round1((this.#source.grants() - first.grants) / seconds) : 0;
  }

  /** Samples once a second until the returned function is called. */
  start(): () => void {
    const tick = () => this.sample(performance.now(), Date.now());
    tick();
    const timer = setInterval(tick, 1000);
    timer.unref();
    return () => clearInterval(timer);
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
