import type { ErrorCode, RequestOp } from "@lock/protocol";
import type { LockServer, ServerObserver } from "@lock/server";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { ContentionMetrics } from "./contention-metrics.js";

const VERBS: readonly RequestOp[] = ["A", "Y", "R", "X", "C", "P", "H", "I"];

/**
 * Prometheus metrics for one lockd. Hot-path hooks (`ServerObserver`) only bump pre-bound
 * children; engine counters and gauges are read when Prometheus scrapes, so they cost nothing
 * between scrapes.
 */
export class LockdMetrics implements ServerObserver {
  readonly registry = new Registry();
  /** Plain counts on the hot path; copied into prom-client only when Prometheus scrapes. */
  readonly #requests: Record<string, number> = Object.fromEntries(VERBS.map((verb) => [verb, 0]));
  readonly #errors: Counter<"code">;
  readonly #queueWait: Histogram;
  readonly #roleChanges: Counter<"role">;
  readonly #authFailures: Counter;
  readonly #onAuthFailure: (remoteAddress: string) => void;
  readonly #authNotRequired: Counter;
  readonly #onAuthNotRequired: (remoteAddress: string) => void;
  #server: LockServer | undefined;

  /**
   * `onAuthFailure`: also told of each wrong auth secret (lockd logs them, rate-limited);
   * `onAuthNotRequired`: of each `H` sent to this server when it has no auth token (lockd warns once).
   */
  /** Wait/hold histograms and held/waiting gauges by key family; undefined when turned off. */
  readonly contention: ContentionMetrics | undefined;

  constructor(
    onAuthFailure: (remoteAddress: string) => void = () => {},
    onAuthNotRequired: (remoteAddress: string) => void = () => {},
    contention?: ContentionMetrics,
  ) {
    this.contention = contention;
    contention?.register(this.registry);
    this.#onAuthFailure = onAuthFailure;
    this.#onAuthNotRequired = onAuthNotRequired;
    // prom-client's default metrics are already named process_* and nodejs_*: the prefix is lockd_
    // alone, which gives lockd_process_cpu_user_seconds_total and lockd_nodejs_eventloop_lag_seconds.
    collectDefaultMetrics({ register: this.registry, prefix: "lockd_" });
    this.#registerRequestCounter();
    this.#errors = new Counter({
      name: "lockd_errors_total",
      help: "E replies sent, by error code",
      labelNames: ["code"],
      registers: [this.registry],
    });
    this.#queueWait = new Histogram({
      name: "lockd_queue_wait_seconds",
      help: "Time an acquire waited in a key's queue before it was handed the key",
      buckets: [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers: [this.registry],
    });
    this.#roleChanges = new Counter({
      name: "lockd_role_changes_total",
      help: "Role changes of this node, by the role it took",
      labelNames: ["role"],
      registers: [this.registry],
    });
    this.#authFailures = new Counter({
      name: "lockd_auth_failures_total",
      help: "Wrong auth secrets (H); each closes its connection",
      registers: [this.registry],
    });
    this.#authNotRequired = new Counter({
      name: "lockd_auth_not_required_total",
      help: "H (auth token) sent to this server, which has no auth token: accepted, checked by no one",
      registers: [this.registry],
    });
    this.#registerClusterMetrics();
    this.#registerEngineCounters();
    this.#registerGauges();
  }

  /** lockd_requests_total: plain counts on the hot path, added to the counter when Prometheus scrapes. */
  /**
   * What /metrics serves: the registry's metrics, then the key-family histograms (kept outside
   * prom-client, see ContentionMetrics.histogramText), both in the text format `contentType` names.
   */
  async exposition(): Promise<string> {
    const text = await this.registry.metrics();
    return this.contention === undefined ? text : text + this.contention.histogramText();
  }

  #registerRequestCounter(): void {
    const counts = this.#requests;
    const reported: Record<string, number> = { ...counts };
    new Counter({
      name: "lockd_requests_total",
      help: "Requests received, by verb",
      labelNames: ["verb"],
      registers: [this.registry],
      collect() {
        for (const verb of VERBS) {
          this.inc({ verb }, counts[verb]! - reported[verb]!);
          reported[verb] = counts[verb]!;
        }
      },
    });
  }

  /** Promotions, demotions, handoffs and epoch raises, and the replication lag by standby. */
  #registerClusterMetrics(): void {
    this.#clusterCounter("lockd_promotions_total", "Promotions of this node to active", (c) => c.promotions);
    this.#clusterCounter(
      "lockd_demotions_total",
      "Demotions of this node after seeing a higher-priority active",
      (c) => c.demotions,
    );
    this.#clusterCounter(
      "lockd_handoffs_sent_total",
      "Graceful handoffs of the active role to another node",
      (c) => c.handoffs,
    );
    this.#clusterCounter(
      "lockd_epoch_raises_total",
      "Epoch raises above a rival active after a partition",
      (c) => c.epochRaises,
    );
    // With a coordinator: the store must stay off the data path, so this grows with ownership
    // changes and renewals (about 3 per lease length), never with requests.
    this.#mirroredCounter(
      "lockd_coordinator_calls_total",
      "Calls to the coordination store (lease acquire, renew, release; epochs)",
      (server) => server.cluster?.ownership?.storeCalls,
    );
    this.#gauge(
      "lockd_coordinator_lease_valid_seconds",
      "How long this node's ownership lease stays valid by its clock (0 without one)",
      (server) => (server.cluster?.ownership?.remainingMs() ?? 0) / 1000,
    );
    this.#gauge(
      "lockd_slot_move_held_keys",
      "On the active of a slot move's source: keys of the moving slots that still have holders (the move commits at 0)",
      (server) => server.slotMoves?.draining()?.heldKeys ?? 0,
    );
    const metrics = this;
    new Gauge({
      name: "lockd_replication_lag_ops",
      help: "Replication operations not yet acknowledged, by standby",
      labelNames: ["peer"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const peer of metrics.#server?.cluster?.peerStatus() ?? []) {
          if (peer.replicationLag) this.set({ peer: peer.address }, peer.replicationLag.ops);
        }
      },
    });
  }

  /** The engine's counters, read when Prometheus scrapes. */
  #registerEngineCounters(): void {
    this.#engineCounter("lockd_grants_total", "Grants, immediate and handoffs", (c) => c.grants);
    this.#engineCounter(
      "lockd_handoffs_total",
      "Grants handed directly to a queued waiter",
      (c) => c.handoffs,
    );
    this.#engineCounter("lockd_releases_total", "Releases that freed a key", (c) => c.releases);
    this.#engineCounter(
      "lockd_stale_releases_total",
      "Releases refused: the token no longer held the key",
      (c) => c.staleReleases,
    );
    this.#engineCounter("lockd_extensions_total", "Lease extensions", (c) => c.extensions);
    this.#engineCounter("lockd_expiries_total", "Leases that ran out and were reclaimed", (c) => c.expiries);
    this.#engineCounter("lockd_timeouts_total", "Acquires whose wait ran out (T replies)", (c) => c.timeouts);
  }

  /** What the server holds now: keys, waiters, connections, watches, unsent bytes, epoch and role. */
  #registerGauges(): void {
    this.#gauge("lockd_keys_held", "Keys held now", (s) => s.node.keyCount);
    this.#gauge("lockd_waiters", "Acquires queued now, all keys (queue depth)", (s) => s.node.waiterCount);
    this.#gauge("lockd_connections", "Open client connections", (s) => s.connectionCount);
    this.#gauge(
      "lockd_watches",
      "Keys watched now (O), all connections together (capped by --max-watches)",
      (s) => s.node.watches.count,
    );
    this.#gauge(
      "lockd_connections_unauthenticated",
      "Open client connections that have not authenticated yet",
      (s) => s.unauthenticatedCount,
    );
    this.#gauge(
      "lockd_unsent_bytes",
      "Reply bytes produced and not yet taken by the kernel, all connections (clients that read slowly)",
      (s) => s.unsentBytes,
    );
    this.#gauge(
      "lockd_connections_backlogged",
      "Connections not read from because they do not read their replies",
      (s) => s.backloggedCount,
    );
    this.#gauge(
      "lockd_epoch",
      "Current token epoch (on a standby: the epoch of the active it follows)",
      (s) => Number(s.node.reportedEpoch),
    );
    this.#gauge("lockd_is_active", "1 when this node serves clients", (s) =>
      s.node.role === "active" ? 1 : 0,
    );
  }

  attach(server: LockServer): void {
    this.#server = server;
  }

  request(op: RequestOp): void {
    this.#requests[op]! += 1;
  }

  granted(waitedMs: number): void {
    // Immediate grants (a free key) wait 0 by definition; lockd_grants_total counts them.
    if (waitedMs > 0) this.#queueWait.observe(waitedMs / 1000);
  }

  roleChanged(role: string): void {
    this.#roleChanges.inc({ role });
  }

  error(code: ErrorCode): void {
    this.#errors.inc({ code });
  }

  authNotRequired(remoteAddress: string): void {
    this.#authNotRequired.inc();
    this.#onAuthNotRequired(remoteAddress);
  }

  authFailed(remoteAddress: string): void {
    this.#authFailures.inc();
    this.#onAuthFailure(remoteAddress);
  }

  /** A counter mirroring a count kept elsewhere (the engine's, the cluster's), read at scrape time. */
  #mirroredCounter(name: string, help: string, read: (server: LockServer) => number | undefined): void {
    let reported = 0;
    const metrics = this;
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        const current = metrics.#server ? read(metrics.#server) : undefined;
        if (current === undefined) return;
        this.inc(current - reported);
        reported = current;
      },
    });
  }

  #engineCounter(
    name: string,
    help: string,
    read: (counters: LockServer["node"]["counters"]) => number,
  ): void {
    this.#mirroredCounter(name, help, (server) => read(server.node.counters));
  }

  #clusterCounter(
    name: string,
    help: string,
    read: (counters: NonNullable<LockServer["cluster"]>["counters"]) => number,
  ): void {
    this.#mirroredCounter(name, help, (server) =>
      server.cluster ? read(server.cluster.counters) : undefined,
    );
  }

  #gauge(name: string, help: string, read: (server: LockServer) => number): void {
    const metrics = this;
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        if (metrics.#server) this.set(read(metrics.#server));
      },
    });
  }
}
