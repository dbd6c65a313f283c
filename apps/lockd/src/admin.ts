import { type CoordinationStore, type LockServer, SecretChecker } from "@lock/server";
import Fastify, { type FastifyInstance } from "fastify";
import type { HostPort } from "./address.js";
import type { ClusterLog } from "./cluster-log.js";
import type { ContentionMetrics } from "./contention-metrics.js";
import { epochAheadStatus } from "./epoch-ahead.js";
import { listLocks, registerLocksRoute } from "./locks-route.js";
import type { LockdMetrics } from "./metrics.js";
import { readiness } from "./readiness.js";
import { registerSlotsRoutes, slotsStatus } from "./slots-route.js";
import type { StatusHistory } from "./status-history.js";
import { registerStatusPage, STATUS_PAGE_PATHS } from "./status-page.js";
import type { KeyPair } from "./tls-files.js";

/** Keys listed under "most contended" in /status. */
const CONTENDED_SHOWN = 10;
/** Key families listed in /status (the most waiting, then the most held). */
const FAMILIES_SHOWN = 10;
/** Held keys the status page lists at a time (its holders view, and the first paint). */
export const PAGE_LOCKS_LIMIT = 20;

export interface AdminDeps {
  readonly server: LockServer;
  readonly metrics: LockdMetrics;
  readonly history: StatusHistory;
  readonly clusterLog: ClusterLog;
  readonly version: string;
  /**
   * When set, every route but /healthz, /readyz and the status page's static files asks for
   * `Authorization: Bearer <adminToken>`.
   */
  readonly adminToken?: string | undefined;
  /** With `--coordinator`: the store, where `POST /slots/moves` begins a move. */
  readonly store?: CoordinationStore | undefined;
}

/**
 * With a coordinator: the store, this node's lease, who holds the lease by the store (one store
 * call, bounded by the backend's timeout; `holderError` if it failed) and the last epoch taken.
 */
async function coordinatorStatus(server: LockServer) {
  const ownership = server.cluster?.ownership;
  if (!ownership) return null;
  const { lastEpoch, ...status } = ownership.status();
  const lease = await ownership.readHolder().then(
    (info) => ({ leaseHolder: info?.holder ?? null, leaseRemainingMs: info?.remainingMs ?? null }),
    (error: unknown) => ({ holderError: error instanceof Error ? error.message : String(error) }),
  );
  return { ...status, lastEpoch: lastEpoch?.toString() ?? null, ...lease };
}

/** The node's status, as `GET /status` returns it. */
export async function nodeStatus(deps: AdminDeps) {
  return { ...nodeStatusNow(deps), coordinator: await coordinatorStatus(deps.server) };
}

function nodeStatusNow({ server, history, clusterLog, version, metrics }: AdminDeps) {
  const node = server.node;
  return {
    version,
    node: node.advertise,
    role: node.role,
    active: node.activeAddress ?? null,
    // A standby issues no tokens: it reports the epoch of the active it follows, and says whose.
    epoch: node.reportedEpoch.toString(),
    epochOf: epochOwner(server),
    // Set while this node's tokens run ahead of its clock (an epoch file or peer ahead of it).
    epochAhead: epochAheadStatus(node.epochAhead()),
    uptimeMs: node.uptimeMs,
    connections: server.connectionCount,
    keysHeld: node.keyCount,
    waiters: node.waiterCount,
    grantsPerSecond: history.grantsPerSecond(performance.now()),
    counters: { ...node.counters },
    cluster: server.cluster
      ? { peers: withFollowedEpochs(server.cluster.peerStatus()), ...server.cluster.counters }
      : null,
    slots: slotsStatus(server),
    ...contentionStatus(node.mostContended(CONTENDED_SHOWN), metrics.contention),
    recentChanges: clusterLog.recent(),
  };
}

/**
 * The most contended keys, each with its key family (null with the family metrics off), and the
 * busiest families: what the status page links them to.
 */
function contentionStatus(
  contended: ReadonlyArray<{ key: string; waiters: number }>,
  contention: ContentionMetrics | undefined,
) {
  return {
    mostContended: contended.map((row) => ({
      ...row,
      family: contention?.families.labelOf(row.key) ?? null,
    })),
    families: contention?.summary(FAMILIES_SHOWN) ?? null,
  };
}

/** Whose epoch `/status` reports: this node's on an active, the followed active's on a standby. */
function epochOwner(server: LockServer): string | null {
  const node = server.node;
  if (node.role === "active") return node.advertise;
  return node.followedEpoch !== undefined ? (node.activeAddress ?? null) : null;
}

type PeerRow = ReturnType<NonNullable<LockServer["cluster"]>["peerStatus"]>[number];

/**
 * Another standby's row shows the epoch of the active it follows (as this node hears that active),
 * as its own `/status` does; its heartbeats carry its table's epoch, which means nothing on a standby.
 */
function withFollowedEpochs(peers: readonly PeerRow[]): PeerRow[] {
  const byAddress = new Map(peers.map((peer) => [peer.address, peer]));
  return peers.map((peer) => {
    if (peer.self || peer.role !== "standby") return peer;
    const followed = peer.follows === null ? undefined : byAddress.get(peer.follows);
    return { ...peer, epoch: followed?.role === "active" ? followed.epoch : "0" };
  });
}

function nodeHistory({ history }: AdminDeps) {
  return { intervalMs: 1000, points: history.points() };
}

/**
 * What the status page shows at its first paint, in the page itself: what /status, /history and
 * the first page of /locks would answer. With an admin token, only what /readyz tells anyone.
 */
async function pageState(deps: AdminDeps) {
  if (deps.adminToken !== undefined) {
    return { auth: "required", node: deps.server.node.advertise, role: deps.server.node.role };
  }
  const locks = await listLocks(deps.server, { prefix: "", after: undefined, limit: PAGE_LOCKS_LIMIT });
  return { status: await nodeStatus(deps), history: nodeHistory(deps), locks };
}

export function nodeReadiness({ server }: AdminDeps) {
  const node = server.node;
  return readiness({
    role: node.role,
    serving: node.serving,
    heldFor: node.heldFor,
    holdingUntilMs: node.heldFor === "clock" ? node.takenEpoch?.servesFromMs : undefined,
    peers: server.cluster?.peerStatus(),
    active: node.activeAddress,
    replicaSource: server.cluster?.replicaSource,
  });
}

/** Open without the admin token: probes (which say little) and the page's static files. */
const PUBLIC_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", ...STATUS_PAGE_PATHS]);

/**
 * The HTTP admin server: health, readiness, status, history, lock listing, Prometheus metrics and the
 * live status page, and the slot map (`/slots`; `POST /slots/moves` begins a move, the one write:
 * docs/operations.md, "Moving slots"). With an admin token, only the probes and the page's files answer
 * without it: a load balancer's checks need no secret, and the page asks for the token itself.
 */
export async function buildAdmin(deps: AdminDeps, https?: KeyPair): Promise<FastifyInstance> {
  // Over HTTPS the server is an https.Server; the routes and hooks are the same, and lockd reaches
  // the server itself only to swap its certificate (tls-reload.ts).
  const app = (https ? Fastify({ logger: false, https }) : Fastify({ logger: false })) as FastifyInstance;
  if (deps.adminToken !== undefined) requireBearer(app, new SecretChecker(deps.adminToken));
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => {
    const ready = nodeReadiness(deps);
    return reply.code(ready.ready ? 200 : 503).send(ready);
  });
  app.get("/version", async () => ({ version: deps.version, node: process.versions.node }));
  app.get("/status", async () => nodeStatus(deps));
  app.get("/history", async () => nodeHistory(deps));
  registerLocksRoute(app, deps.server);
  registerSlotsRoutes(app, deps.server, deps.store);
  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
  registerStatusPage(app, () => pageState(deps));
  return app;
}

/** Starts the admin server on `listen`: HTTPS with `https` (a certificate and its key), else HTTP. */
export async function startAdmin(
  listen: HostPort,
  deps: AdminDeps,
  https?: KeyPair,
): Promise<FastifyInstance> {
  const app = await buildAdmin(deps, https);
  await app.listen({ host: listen.host, port: listen.port });
  return app;
}

/** Refuses (401) every request but the public paths whose bearer token is not the admin token. */
function requireBearer(app: FastifyInstance, token: SecretChecker): void {
  app.addHook("onRequest", async (request, reply) => {
    // The matched route, not the raw URL: "/healthz?x" is /healthz, and an unknown path needs the token.
    const route = request.routeOptions.url;
    if (route !== undefined && PUBLIC_PATHS.has(route)) return;
    const presented = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? "")?.[1] ?? "";
    // Constant-time compare; an absent token is compared like a wrong one.
    if (token.matches(presented)) return;
    await reply.code(401).header("www-authenticate", 'Bearer realm="lockd"').send({ error: "unauthorized" });
  });
}
