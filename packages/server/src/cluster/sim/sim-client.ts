import { encodeRequest, isDecodeError, parseReplyLine, type Reply, type Request } from "@lock/protocol";
import type { History } from "./history.js";
import type { Connection, ConnectionEnd, Host, Network } from "./network.js";
import type { Rng } from "./rng.js";
import type { Scheduler } from "./scheduler.js";

/** How @lock/client behaves, as far as the cluster's guarantees are concerned (its defaults). */
export const CLIENT_RECONNECT_MS = 3_000;
const RELEASE_RETRY_MS = 200;
const RELEASE_RETRY_FOR_MS = 5_000;
const NO_ACTIVE_RETRY_MS = 100;
/** A client gives up on an acquire this long after its wait ran out without an answer. */
const ACQUIRE_GRACE_MS = 2_000;

interface Slot {
  readonly node: string;
  connection: Connection | undefined;
  connecting: boolean;
}

interface Attempt {
  readonly slot: Slot;
  readonly connection: Connection;
}

interface AcquireOp {
  readonly kind: "acquire";
  readonly id: string;
  readonly key: string;
  readonly leaseMs: number;
  readonly deadline: number;
  attempt: Attempt | undefined;
  settled: boolean;
}

interface ReleaseOp {
  readonly kind: "release";
  readonly id: string;
  readonly key: string;
  readonly token: bigint;
  /** Set when the first release is sent: retries stop 5 s later. */
  giveUpAt: number;
  attempt: Attempt | undefined;
  settled: boolean;
}

/**
 * A simulated application process using @lock/client: one connection per node, requests to the
 * node it believes active, redirects followed, acquires retried with the same id (and their
 * remaining wait) when a connection drops or no node is active, releases retried every 200 ms for
 * 5 s, late grants released. It runs one operation at a time: acquire, hold, release.
 */
export class SimClient implements Host {
  readonly up = true;
  readonly stalled = false;
  readonly generation = 0;
  readonly #slots: Slot[];
  #preferred: string | undefined;
  #cursor = 0;
  #ops = 0;
  #op: AcquireOp | ReleaseOp | undefined;
  /** Stop starting operations (the run is draining). */
  draining = false;

  constructor(
    readonly name: string,
    readonly nodes: readonly string[],
    readonly keys: readonly string[],
    readonly scheduler: Scheduler,
    readonly network: Network,
    readonly rng: Rng,
    readonly history: History,
  ) {
    this.#slots = nodes.map((node) => ({ node, connection: undefined, connecting: false }));
  }

  defer(work: () => void): void {
    work();
  }

  accept(): ConnectionEnd | undefined {
    return undefined;
  }

  /** The operation in progress, if any: nothing may be left unsettled once the run drained. */
  get busy(): boolean {
    return this.#op !== undefined;
  }

  start(): void {
    for (const slot of this.#slots) this.#connect(slot);
    this.scheduler.after(this.rng.int(0, 50), () => this.#nextOp());
  }

  #connect(slot: Slot): void {
    if (slot.connecting || slot.connection) return;
    slot.connecting = true;
    let connection: Connection | undefined;
    this.network.dial(
      this.name,
      slot.node,
      {
        onLine: (text) => {
          if (connection)
            for (const line of text.split("\n")) if (line !== "") this.#onLine(slot, connection, line);
        },
        onClose: () => {
          if (connection && slot.connection === connection) this.#closed(slot, connection);
        },
      },
      (opened) => {
        slot.connecting = false;
        connection = opened;
        slot.connection = opened;
      },
      () => {
        slot.connecting = false;
        this.scheduler.after(CLIENT_RECONNECT_MS, () => this.#connect(slot));
      },
    );
  }

  #closed(slot: Slot, connection: Connection): void {
    slot.connection = undefined;
    this.scheduler.after(CLIENT_RECONNECT_MS, () => this.#connect(slot));
    // A request in flight on it has an unknown outcome: retried safely (same id; releases by token).
    const op = this.#op;
    if (op?.attempt?.connection === connection) {
      op.attempt = undefined;
      this.#send(op);
    }
  }

  #nextOp(): void {
    if (this.draining || this.#op) return;
    const n = this.#ops++;
    const key = this.rng.pick(this.keys);
    const leaseMs = this.rng.int(200, 2_000);
    const waitMs = this.rng.int(100, 3_000);
    const op: AcquireOp = {
      kind: "acquire",
      id: `${this.name}.${n}`,
      key,
      leaseMs,
      deadline: this.scheduler.now + waitMs,
      attempt: undefined,
      settled: false,
    };
    this.#op = op;
    this.history.acquireStarted(this.name, op.id, key);
    this.scheduler.at(op.deadline + ACQUIRE_GRACE_MS, () => {
      if (op.settled) return;
      // No answer in time (a stalled node holds it): withdraw it; a late grant is released.
      if (op.attempt) this.#write(op.attempt, { op: "C", key: op.key, id: op.id });
      this.#settleAcquire(op, "gave-up");
    });
    this.#send(op);
  }

  /** Sends the operation's request on the best connection, or retries shortly if none is up. */
  #send(op: AcquireOp | ReleaseOp): void {
    if (op.settled || this.#op !== op) return;
    const now = this.scheduler.now;
    if (op.kind === "acquire" && now >= op.deadline) {
      this.#settleAcquire(op, "timed-out");
      return;
    }
    if (op.kind === "release" && now >= op.giveUpAt) {
      this.#settleRelease(op, "abandoned");
      return;
    }
    const slot = this.#pickSlot();
    if (!slot?.connection) {
      this.scheduler.after(op.kind === "release" ? RELEASE_RETRY_MS : NO_ACTIVE_RETRY_MS, () =>
        this.#send(op),
      );
      return;
    }
    const attempt = { slot, connection: slot.connection };
    op.attempt = attempt;
    if (op.kind === "acquire") {
      const waitMs = Math.max(1, Math.ceil(op.deadline - now));
      this.#write(attempt, { op: "A", key: op.key, leaseMs: op.leaseMs, waitMs, id: op.id });
    } else {
      this.#write(attempt, { op: "R", key: op.key, token: op.token, id: op.id });
    }
  }

  #write(attempt: Attempt, request: Request): void {
    this.network.send(attempt.connection, 0, encodeRequest(request));
  }

  #pickSlot(): Slot | undefined {
    const preferred = this.#slots.find((slot) => slot.node === this.#preferred && slot.connection);
    if (preferred) return preferred;
    for (let i = 0; i < this.#slots.length; i++) {
      const slot = this.#slots[(this.#cursor + i) % this.#slots.length]!;
      if (slot.connection) {
        this.#cursor = (this.#cursor + i + 1) % this.#slots.length;
        return slot;
      }
    }
    return undefined;
  }

  #onLine(slot: Slot, connection: Connection, line: string): void {
    const reply = parseReplyLine(line);
    if (isDecodeError(reply)) throw new Error(`${this.name}: undecodable reply ${JSON.stringify(line)}`);
    const op = this.#op;
    const current = op?.attempt?.connection === connection && !op.settled ? op : undefined;
    if (reply.kind === "A" || reply.kind === "Y") {
      if (current?.kind === "acquire" && reply.id === current.id) {
        this.history.acquired(this.name, current.id, reply.key, reply.token, slot.node);
        this.#settleAcquire(current, "granted", reply.token);
        return;
      }
      // A grant for an acquire this client no longer waits for (gave up, or retried elsewhere
      // and was granted there): release it at once, as @lock/client does.
      this.history.lateGrant(this.name, reply.key, reply.token);
      this.network.send(
        connection,
        0,
        encodeRequest({ op: "R", key: reply.key, token: reply.token, ...(reply.id ? { id: reply.id } : {}) }),
      );
      return;
    }
    if (!current || !matches(current, reply)) return;
    this.#answer(current, reply);
  }

  #answer(op: AcquireOp | ReleaseOp, reply: Reply): void {
    op.attempt = undefined;
    switch (reply.kind) {
      case "T":
        if (op.kind === "acquire") this.#settleAcquire(op, "timed-out");
        return;
      case "R":
        if (op.kind === "release") this.#settleRelease(op, reply.released ? "released" : "stale");
        return;
      case "M":
        this.#preferred = reply.address;
        this.#send(op);
        return;
      case "E":
        if (reply.code === "NO_ACTIVE" || reply.code === "SHUTTING_DOWN") {
          if (reply.code === "NO_ACTIVE") this.#preferred = undefined;
          this.scheduler.after(op.kind === "release" ? RELEASE_RETRY_MS : NO_ACTIVE_RETRY_MS, () =>
            this.#send(op),
          );
          return;
        }
        if (op.kind === "acquire") this.#settleAcquire(op, `error ${reply.code}`);
        else this.#settleRelease(op, `error ${reply.code}`);
        return;
      default:
        return;
    }
  }

  #settleAcquire(op: AcquireOp, outcome: string, token?: bigint): void {
    op.settled = true;
    this.#op = undefined;
    this.history.acquireSettled(this.name, op.id, outcome);
    if (token === undefined) {
      this.scheduler.after(this.rng.int(0, 100), () => this.#nextOp());
      return;
    }
    // Hold it, sometimes past the lease (a stalled holder), then release.
    const holdMs = this.rng.chance(0.1)
      ? this.rng.int(op.leaseMs, op.leaseMs * 2)
      : this.rng.int(0, op.leaseMs / 2);
    const release: ReleaseOp = {
      kind: "release",
      id: op.id,
      key: op.key,
      token,
      giveUpAt: Number.POSITIVE_INFINITY,
      attempt: undefined,
      settled: false,
    };
    this.#op = release;
    this.scheduler.after(holdMs, () => {
      release.giveUpAt = this.scheduler.now + RELEASE_RETRY_FOR_MS;
      this.#send(release);
    });
  }

  #settleRelease(op: ReleaseOp, outcome: string): void {
    op.settled = true;
    this.#op = undefined;
    this.history.released(this.name, op.id, op.key, op.token, outcome);
    this.scheduler.after(this.rng.int(0, 100), () => this.#nextOp());
  }
}

function matches(op: AcquireOp | ReleaseOp, reply: Reply): boolean {
  switch (reply.kind) {
    case "T":
      return op.kind === "acquire" && reply.key === op.key && reply.id === op.id;
    case "R":
      return op.kind === "release" && reply.key === op.key;
    case "M":
    case "E":
      return reply.key === op.key && (reply.id === undefined || reply.id === op.id);
    default:
      return false;
  }
}
