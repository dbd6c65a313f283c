import { DeadlineTimer } from "./deadline-timer.js";
import { type Clock, monotonicClock } from "./engine/clock.js";
import { type EngineJournal, LockEngine } from "./engine/engine.js";
import { TokenIssuer } from "./engine/token-issuer.js";
import type { ServerLimits } from "./limits.js";
import { NO_OBSERVER, type ServerObserver } from "./observer.js";
import { DataDirLock } from "./store/data-dir-lock.js";
import { EpochFile } from "./store/epoch-file.js";

/** Where the engine delivers a queued acquire's outcome: the connection that asked. */
export interface AcquireSink {
  granted(key: string, token: bigint, id: string | undefined): void;
  timedOut(key: string, id: string | undefined): void;
}

export type NodeRole = "active" | "standby";

export interface LockNodeOptions {
  readonly dataDir: string;
  readonly limits: ServerLimits;
  /** The address clients and peers know this node by. */
  readonly advertise: string;
  readonly clock?: Clock;
  readonly journal?: EngineJournal;
  readonly observer?: ServerObserver;
  /** A cluster node starts as a standby and promotes by the cluster's rules. */
  readonly startAs?: NodeRole;
}

/**
 * One lockd node's state: the engine, its token epoch on disk and the timer that drives leases
 * and waits. The network layer and (later) the cluster layer talk to the node, never to files or
 * timers directly.
 */
export class LockNode {
  readonly engine: LockEngine<AcquireSink>;
  readonly advertise: string;
  readonly clock: Clock;
  readonly startedAt: number;
  readonly observer: ServerObserver;
  role: NodeRole = "active";
  /** The active's address as far as this node knows (itself when active). */
  activeAddress: string | undefined;
  readonly #epochFile: EpochFile;
  readonly #dirLock: DataDirLock;
  readonly #timer: DeadlineTimer;

  constructor(options: LockNodeOptions) {
    this.clock = options.clock ?? monotonicClock;
    this.advertise = options.advertise;
    this.observer = options.observer ?? NO_OBSERVER;
    this.activeAddress = options.advertise;
    this.#epochFile = new EpochFile(options.dataDir);
    this.#dirLock = DataDirLock.acquire(options.dataDir);
    try {
      // A fresh epoch before the first grant: every token from now on exceeds every earlier one.
      const epoch = this.#epochFile.takeNext();
      const tokens = new TokenIssuer(epoch, () => this.#epochFile.takeNext());
      this.engine = new LockEngine<AcquireSink>({
        clock: this.clock,
        tokens,
        events: {
          granted: (sink, key, token, id, waitedMs) => {
            this.observer.granted(waitedMs);
            sink.granted(key, token, id);
          },
          timedOut: (sink, key, id) => sink.timedOut(key, id),
        },
        ...(options.journal ? { journal: options.journal } : {}),
        limits: { maxKeys: options.limits.maxKeys, maxWaitersPerKey: options.limits.maxWaitersPerKey },
      });
    } catch (error) {
      this.#dirLock.release();
      throw error;
    }
    this.#timer = new DeadlineTimer(this.engine, this.clock);
    this.startedAt = this.clock.now();
    if (options.startAs === "standby") this.setRole("standby", undefined);
  }

  get epoch(): bigint {
    return this.engine.epoch;
  }

  get uptimeMs(): number {
    return Math.round(this.clock.now() - this.startedAt);
  }

  /**
   * Takes a new, persisted epoch of at least `atLeast` and issues tokens from it (promotion, or
   * moving above a rival's epoch). Every later token exceeds every token of earlier epochs.
   */
  takeEpoch(atLeast: bigint): bigint {
    const epoch = this.#epochFile.takeNext(atLeast);
    this.engine.moveToEpoch(epoch);
    return epoch;
  }

  /**
   * Switches role. Only the active runs lease and wait deadlines: a standby's holder table is a
   * replica, and its leases are reclaimed by the active (or by this node once promoted).
   */
  setRole(role: NodeRole, activeAddress: string | undefined): void {
    this.role = role;
    this.activeAddress = activeAddress;
    this.engine.deferDeadlines(role !== "active");
    if (role === "active") this.#timer.start();
    else this.#timer.stop();
  }

  /** Re-arms the deadline timer after requests that may have added an earlier deadline. */
  afterRequests(): void {
    this.#timer.poke();
  }

  close(): void {
    this.#timer.stop();
    this.#dirLock.release();
  }
}
