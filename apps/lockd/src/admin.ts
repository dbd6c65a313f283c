import { type LockServer, SecretChecker } from "@lock/server";
import Fastify, { type FastifyInstance } from "fastify";
import type { HostPort } from "./address.js";
import type { LockdMetrics } from "./metrics.js";
import type { RateMeter } from "./rate-meter.js";

export interface AdminDeps {
  readonly server: LockServer;
  readonly metrics: LockdMetrics;
  readonly grantRate: RateMeter;
  readonly version: string;
  /** When set, every route but /healthz asks for `Authorization: Bearer <adminToken>`. */
  readonly adminToken?: string | undefined;
}

/** The node's status, as `GET /status` returns it. */
export function nodeStatus({ server, grantRate, version }: AdminDeps) {
  const node = server.node;
  return {
    version,
    node: node.advertise,
    role: node.role,
    active: node.activeAddress ?? null,
    epoch: node.epoch.toString(),
    uptimeMs: node.uptimeMs,
    connections: server.connectionCount,
    keysHeld: node.engine.keyCount,
    waiters: node.engine.waiterCount,
    grantsPerSecond: Math.round(grantRate.perSecond() * 10) / 10,
    counters: { ...node.engine.counters },
    cluster: server.cluster ? { peers: server.cluster.peerStatus(), ...server.cluster.counters } : null,
  };
}

/**
 * The HTTP admin server: health, status and Prometheus metrics. Read-only. With an admin token, only
 * /healthz answers without it: a load balancer's health check needs no secret, and says nothing.
 */
export async function startAdmin(listen: HostPort, deps: AdminDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  if (deps.adminToken !== undefined) requireBearer(app, new SecretChecker(deps.adminToken));
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/status", async () => nodeStatus(deps));
  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
  await app.listen({ host: listen.host, port: listen.port });
  return app;
}

/** Refuses (401) every request but /healthz whose bearer token is not the admin token. */
function requireBearer(app: FastifyInstance, token: SecretChecker): void {
  app.addHook("onRequest", async (request, reply) => {
    // The matched route, not the raw URL: "/healthz?x" is /healthz, and an unknown path needs the token.
    if (request.routeOptions.url === "/healthz") return;
    const presented = /^Bearer (\S+)$/i.exec(request.headers.authorization ?? "")?.[1] ?? "";
    // Constant-time compare; an absent token is compared like a wrong one.
    if (token.matches(presented)) return;
    await reply.code(401).header("www-authenticate", 'Bearer realm="lockd"').send({ error: "unauthorized" });
  });
}
