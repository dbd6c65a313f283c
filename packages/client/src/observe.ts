import type { LockMode, Reply } from "@lock/protocol";
import type { Connection } from "./connection.js";
import { ClientClosedError, LockServerError, NoServerError } from "./errors.js";
import type { Timer, TimerQueue } from "./timers.js";

/** Who holds a key, as `client.observe()` yields it (docs/protocol.md, "Watching a key"). */
export interface HolderState {
  readonly key: string;
  readonly held: boolean;
  /**
   * The newest grant's fencing token among the holders (an exclusive key's holder's; the leadership
   * term when the key elects a leader); `0n` when free.
   */
  readonly token: bigint;
  /** The key's mode while held (`exclusive`, `shared`, `permit` with its limit); undefined when free. */
  readonly mode: LockMode | undefined;
  /** How many hold the key (1 for an exclusive key, 0 when free). */
  readonly holders: number;
}

export interface ObserveOptions {
  /** Ends the iteration (and the watch) when it aborts. */
  readonly signal?: AbortSignal;
}

/** What an observer needs of its client. */
export interface ObserveContext {
  readonly timers: TimerQueue;
  readonly retryIntervalMs: number;
  /**
   * Sends `O <key>` until a node answers it (retried over connections, redirects and failovers);
   * `done` gets the answer and the connection it came on, or the error the request failed with.
   */
  subscribe(
    key: string,
    done: (reply: Reply | undefined, connection: Connection | undefined, error: Error | undefined) => void,
  ): {
    abandon(error: Error): void;
  };
  /** The observer ended: the client forgets it. */
  ended(observer: KeyObserver): void;
}

/** States kept for a consumer that reads slower than they come; past it the oldest are dropped. */
const MAX_BUFFERED_STATES = 64;

// WatchListener is structural and left out of `implements`: its members are internal, stripped from
// the published declarations, where the clause would no longer hold. (No at-sign tag here: any
// leading comment naming the internal tag strips the whole class.)
/**
 * `client.observe(key)`: an async iterator of the key's holder states. It watches the key on one
 * connection (`O`); when that watch ends (the connection closed, a failover, a handoff's pushed
 * redirect) it watches again through the client's usual retries, whose answer is the state the
 * (new) active has. It yields that state unless it equals the last one yielded, so a watcher always
 * learns the current holder and never sees the same state twice in a row. Ends on `signal`, on
 * `return()` (a `break` out of `for await`) and when the client closes; fails with the error of a
 * refused watch (`TOO_MANY_WATCHES`…). While no node answers it keeps asking, every retry interval.
 */
export class KeyObserver implements AsyncIterableIterator<HolderState> {
  readonly key: string;
  readonly #context: ObserveContext;
  readonly #signal: AbortSignal | undefined;
  readonly #buffered: HolderState[] = [];
  #last: HolderState | undefined;
  #waiting: { resolve(result: IteratorResult<HolderState>): void; reject(error: Error): void } | undefined;
  #connection: Connection | undefined;
  #subscribing: { abandon(error: Error): void } | undefined;
  #retry: Timer | undefined;
  #over = false;
  #error: Error | undefined;

  constructor(key: string, context: ObserveContext, signal: AbortSignal | undefined) {
    this.key = key;
    this.#context = context;
    this.#signal = signal;
    if (signal?.aborted) {
      this.end();
      return;
    }
    signal?.addEventListener("abort", this.#onAbort, { once: true });
    this.#subscribe();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<HolderState> {
    return this;
  }

  next(): Promise<IteratorResult<HolderState>> {
    const state = this.#buffered.shift();
    if (state !== undefined) return Promise.resolve({ value: state, done: false });
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#over) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
  }

  return(): Promise<IteratorResult<HolderState>> {
    this.end();
    this.#buffered.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Stops watching; the iteration ends once what was buffered has been read. Idempotent. */
  end(error?: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.#error = error;
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#retry?.cancel();
    this.#subscribing?.abandon(new ClientClosedError());
    this.#subscribing = undefined;
    this.#connection?.unwatch(this.key, this);
    this.#connection = undefined;
    this.#context.ended(this);
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) return;
    if (error !== undefined) waiting.reject(error);
    else waiting.resolve({ value: undefined, done: true });
  }

  /** @internal WatchListener: a state, or the end of the watch on its connection. */
  pushed(reply: Reply): void {
    if (this.#over) return;
    if (reply.kind === "O") this.#yield(reply);
    else {
      // The node stopped serving (M, E NO_ACTIVE) or the key moved (S): watch again, from the start.
      this.#connection = undefined;
      this.#subscribe();
    }
  }

  /** @internal WatchListener: the connection closed. */
  ended(): void {
    if (this.#over) return;
    this.#connection = undefined;
    this.#subscribe();
  }

  readonly #onAbort = (): void => this.end();

  #subscribe(): void {
    this.#retry?.cancel();
    this.#retry = undefined;
    this.#subscribing = this.#context.subscribe(this.key, (reply, connection, error) => {
      this.#subscribing = undefined;
      if (this.#over) {
        // Answered after the end: that connection watches the key for nobody.
        if (reply?.kind === "O") connection?.unwatch(this.key, this);
        return;
      }
      if (reply?.kind === "O" && connection !== undefined) {
        this.#connection = connection;
        connection.watch(this.key, this);
        this.#yield(reply);
      } else if (
        error instanceof NoServerError ||
        isPassing(error) ||
        (error === undefined && reply?.kind !== "O")
      ) {
        // Nobody answered within the retry window (a cluster without an active for long), or the key's
        // slot is moving between clusters: keep asking.
        this.#retry = this.#context.timers.after(this.#context.retryIntervalMs, () => this.#subscribe());
      } else if (error instanceof ClientClosedError) this.end();
      else this.end(error);
    });
  }

  #yield(reply: Extract<Reply, { kind: "O" }>): void {
    const state: HolderState = {
      key: this.key,
      held: reply.holders > 0,
      token: reply.token,
      mode: reply.mode,
      holders: reply.holders,
    };
    if (this.#last !== undefined && sameState(this.#last, state)) return;
    this.#last = state;
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve({ value: state, done: false });
      return;
    }
    if (this.#buffered.length >= MAX_BUFFERED_STATES) this.#buffered.shift();
    this.#buffered.push(state);
  }
}

function sameState(a: HolderState, b: HolderState): boolean {
  if (a.token !== b.token || a.holders !== b.holders) return false;
  if (a.mode === undefined || b.mode === undefined) return a.mode === b.mode;
  return (
    a.mode.kind === b.mode.kind &&
    (a.mode.kind !== "permit" || b.mode.kind !== "permit" || a.mode.limit === b.mode.limit)
  );
}

/** A refusal that passes by itself: the key's slot is moving to another cluster (docs/protocol.md, "Key slots"). */
function isPassing(error: Error | undefined): boolean {
  return error instanceof LockServerError && error.serverCode === "SLOT_MOVING";
}
