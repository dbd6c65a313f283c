import type { LockServer } from "@lock/server";
import Fastify, { type FastifyInstance } from "fastify";
import type { HostPort } from "./address.js";
import type { LockdMetrics } from "./metrics.js";
import type { RateMeter } from "./rate-meter.js";

export interface AdminDeps {
  readonly server: LockServer;
  readonly metrics: LockdMetrics;
  readonly grantRate: RateMeter;
  readonly version: string;
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

/** The HTTP admin server: health, status and Prometheus metrics. Read-only. */
export async function startAdmin(listen: HostPort, deps: AdminDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/status", async () => nodeStatus(deps));
  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
  await app.listen({ host: listen.host, port: listen.port });
  return app;
}
