#!/usr/bin/env node
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Server as TlsServer } from "node:tls";
import { CoordinatorUrlError, openCoordinationStore } from "@lock/coordinator";
import { formatAddress } from "@lock/protocol";
import {
  ClusterActives,
  type CoordinationOptions,
  DEFAULT_OWNERSHIP_MARGIN_MS,
  EpochStoreError,
  followSlotMap,
  LockServer,
  type LockServerOptions,
  monotonicClock,
  ownershipHolder,
  ReportLimiter,
  SlotGate,
  type SlotMapEvents,
  type SlotMoveEvents,
} from "@lock/server";
import { useFastIo } from "@lock/socket-io";
import { pino } from "pino";
import { ConfigError, isLoopback } from "./address.js";
import { startAdmin } from "./admin.js";
import { AuthFailureLog } from "./auth-failure-log.js";
import { ClusterLog } from "./cluster-log.js";
import { type LockdConfig, parseConfig, usage } from "./config.js";
import { ContentionMetrics } from "./contention-metrics.js";
import { checkDataDir } from "./data-dir.js";
import { epochAheadLog, epochAheadStatus } from "./epoch-ahead.js";
import { KeyFamilies } from "./key-families.js";
import { LockdMetrics } from "./metrics.js";
import { StatusHistory } from "./status-history.js";
import { reloadTls } from "./tls-reload.js";

const version: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

type Log = ReturnType<typeof pino>;
type ClusterOptions = NonNullable<LockServerOptions["cluster"]>;

async function main(): Promise<void> {
  const config = readConfig();
  if (config === undefined) return;
  const log = openLog(config);
  const authFailures = new AuthFailureLog((fields, message) => log.warn(fields, message));
  const metrics = openMetrics(config, log, authFailures);
  // Filled by the cluster's events: the status page's recent changes, /readyz's sync view.
  let server: LockServer | undefined;
  const clusterLog = new ClusterLog(() => server?.node.advertise ?? "this node");
  // At start and at every promotion: an epoch ahead of the clock is served anyway, and said loudly.
  const warnIfEpochAhead = () => {
    const ahead = epochAheadStatus(server?.node.epochAhead());
    if (ahead === null) return;
    const { fields, message } = epochAheadLog(ahead, join(config.dataDir, "epoch"));
    log.warn(fields, message);
  };

  // Before the server starts: every socket it serves or dials follows this process-wide choice.
  const directWrites = config.fastIo && useFastIo(true);
  if (config.fastIo && !directWrites) {
    log.warn("--fast-io: this Node lacks the internals for direct writes; writes use the socket streams");
  }
  warnOfWeakSpots(log, config);
  const events = clusterEvents(log, metrics, clusterLog, warnIfEpochAhead);
  const coordination = openCoordinator(config);
  const slots = slotGate(config, coordination);
  const started = await LockServer.start({
    ...serverOptions(config, metrics, events, coordination),
    ...(slots ? { slots, slotMoveEvents: slotMoveEvents(log) } : {}),
  });
  const stopSlotMap =
    slots && coordination
      ? followSlotMap(coordination.store, slots, config.coordinator?.slotMap, slotMapEvents(log))
      : undefined;
  server = started;
  metrics.attach(started);
  warnIfEpochAhead();
  const history = statusHistory(started);
  const stopHistory = history.start();
  const admin = config.admin
    ? await startAdmin(
        config.admin,
        {
          server: started,
          metrics,
          history,
          clusterLog,
          version,
          adminToken: config.adminToken,
          store: coordination?.store,
        },
        config.adminTls,
      )
    : undefined;

  // Signals are handled before "ready" is announced: whoever waits for it may stop us at once.
  handleSignals(
    log,
    async () => {
      stopHistory();
      stopSlotMap?.();
      // The cluster gave its lease back (or handed it off) as it stopped: the store goes last.
      await Promise.all([started.close(config.shutdownGraceMs), admin?.close()]);
      await coordination?.store.close();
      authFailures.flush();
    },
    () =>
      reloadTls(
        config.tlsPaths,
        (path) => readFileSync(path),
        { server: started, admin: config.adminTls ? (admin?.server as unknown as TlsServer) : undefined },
        log,
      ),
  );
  const adminAddress = admin?.server.address();
  logReady(log, config, started, {
    adminPort: typeof adminAddress === "object" && adminAddress ? adminAddress.port : null,
    directWrites,
  });
}

/** The configuration to run with, or undefined once --help or --version is answered. */
function readConfig(): LockdConfig | undefined {
  let parsed: ReturnType<typeof parseConfig>;
  try {
    parsed = parseConfig(process.argv.slice(2), process.env);
    if (!parsed.help && !parsed.version) checkDataDir(parsed.config.dataDir);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`lockd: ${error.message}\nrun lockd --help for the flags\n`);
    process.exit(2);
  }
  if (parsed.help) {
    process.stdout.write(`${usage()}\n`);
    return undefined;
  }
  if (parsed.version) {
    process.stdout.write(`${version}\n`);
    return undefined;
  }
  return parsed.config;
}

/**
 * The coordination store `--coordinator` names, and this process's name for the ownership lease
 * (its address and a random incarnation: a restart is another holder). Nothing connects yet. A URL
 * the store cannot use is a configuration error (status 2), like any other bad setting.
 */
function openCoordinator(config: LockdConfig): CoordinationOptions | undefined {
  const coordinator = config.coordinator;
  if (!coordinator) return undefined;
  try {
    const store = openCoordinationStore(coordinator.url);
    const advertise = config.advertise ?? formatAddress(config.listen.host, config.listen.port);
    return {
      store,
      cluster: coordinator.clusterName,
      holder: ownershipHolder(advertise, randomBytes(4).toString("hex")),
      leaseMs: coordinator.leaseMs,
      marginMs: DEFAULT_OWNERSHIP_MARGIN_MS,
    };
  } catch (error) {
    if (!(error instanceof CoordinatorUrlError)) throw error;
    process.stderr.write(`lockd: ${coordinator.origin}: ${error.message}\nrun lockd --help for the flags\n`);
    process.exit(2);
  }
}

/** With --slot-map: the gate that keeps this cluster to its slots (it waits for the store's map). */
function slotGate(config: LockdConfig, coordination: CoordinationOptions | undefined): SlotGate | undefined {
  const coordinator = config.coordinator;
  if (coordinator?.slotMap === undefined || coordination === undefined) return undefined;
  // S replies name the other cluster's active, read from its ownership lease.
  const actives = new ClusterActives(coordination.store, monotonicClock);
  return new SlotGate(coordinator.clusterName, {
    awaitMap: true,
    activeOf: (cluster) => actives.activeOf(cluster),
  });
}

function slotMapEvents(log: Log): SlotMapEvents {
  return {
    mapChanged: (map) =>
      log.info(
        { version: String(map.version), clusters: [...map.clusters.keys()], ranges: map.ranges.length },
        "slot map in force",
      ),
    mapRefused: (version, error) =>
      log.error(
        { version: String(version), error: error.message },
        "the coordinator's slot map is invalid; keeping the previous one",
      ),
    mapDeleted: () => log.error("the coordinator's slot map was deleted; keeping the previous one"),
    seedFailed: (error) =>
      log.warn(
        { error: error instanceof Error ? error.message : String(error) },
        "could not write --slot-map to the coordinator",
      ),
  };
}

function slotMoveEvents(log: Log): SlotMoveEvents {
  return {
    withdrawn: (count) => log.info({ count }, "queued acquires of moving slots refused (SLOT_MOVING)"),
    committed: (ranges, version) =>
      log.info(
        { version: String(version), ranges: ranges.map((r) => `${r.from}-${r.to}>${r.movingTo}`) },
        "slot move committed",
      ),
    gainsServed: () => log.info("slots moved here are served: a fresh epoch from the coordinator is in use"),
    storeFailed: (operation, error) =>
      log.warn({ error: error instanceof Error ? error.message : String(error) }, `could not ${operation}`),
  };
}

/** What --insecure, or a missing certificate, leaves open: said at every start. */
function warnOfWeakSpots(log: Log, config: LockdConfig): void {
  if (config.peers && config.peerToken === undefined) {
    log.warn("no peer token (--insecure): anyone who reaches the client port can join this cluster");
  }
  if (config.admin && config.adminToken !== undefined && !config.adminTls && !isLoopback(config.admin.host)) {
    log.warn(
      { admin: `${config.admin.host}:${config.admin.port}` },
      "the admin server speaks plain HTTP: its admin token crosses the network in clear; set --admin-tls-cert and --admin-tls-key to serve HTTPS",
    );
  }
}

function openLog(config: LockdConfig): Log {
  // Synchronous writes: lockd logs events, not requests, so this costs nothing, and nothing is pending
  // at exit. With pino's default asynchronous stream, exiting with an unread or closed stdout (a log
  // collector that died) makes the exit-time flush retry a broken pipe forever, and SIGTERM never
  // finishes.
  return pino({ name: "lockd", level: config.logLevel }, pino.destination({ dest: 1, sync: true }));
}

/**
 * A client sending a token this server does not check is accepted (a rollout may give clients
 * their token first), but it may believe it is protected: said once, counted always (by metrics).
 */
function onceAuthNotRequired(log: Log): (remote: string) => void {
  let warned = false;
  return (remote) => {
    if (warned) return;
    warned = true;
    log.warn(
      { remote },
      "a client sent an auth token (H), but this server has none: its token is not checked and anyone who reaches the port is served; set --auth-token-file to require it (lockd_auth_not_required_total counts them; this is said once)",
    );
  };
}

/** lockd's metrics, with the key-family ones (`--key-families`) unless `--key-family-limit 0`. */
function openMetrics(config: LockdConfig, log: Log, authFailures: AuthFailureLog): LockdMetrics {
  const families = config.keyFamilies;
  const contention = families
    ? new ContentionMetrics(new KeyFamilies(families.rules, families.limit), families.limit)
    : undefined;
  return new LockdMetrics((remote) => authFailures.failed(remote), onceAuthNotRequired(log), contention);
}

function serverOptions(
  config: LockdConfig,
  metrics: LockdMetrics,
  events: ClusterOptions["events"],
  coordination: CoordinationOptions | undefined,
): LockServerOptions {
  return {
    host: config.listen.host,
    port: config.listen.port,
    dataDir: config.dataDir,
    ...(config.advertise ? { advertise: config.advertise } : {}),
    ...(config.authToken ? { authToken: config.authToken } : {}),
    ...(config.tls ? { tls: config.tls } : {}),
    limits: config.limits,
    semaphores: config.semaphores,
    ...(config.nodeId !== undefined ? { nodeId: config.nodeId } : {}),
    maxClockSkewMs: config.maxClockSkewMs,
    version,
    observer: metrics,
    ...(config.peers
      ? {
          cluster: {
            peers: config.peers,
            ...(config.peerToken ? { peerToken: config.peerToken } : {}),
            ...(config.tls ? { tls: config.tlsCa ? { ca: config.tlsCa } : {} } : {}),
            timing: { heartbeatMs: config.heartbeatMs, peerTimeoutMs: config.peerTimeoutMs },
            ...(coordination ? { coordination } : {}),
            ...(events ? { events } : {}),
          },
        }
      : {}),
  };
}

/** The cluster's events, logged, counted and kept for the status page. */
function clusterEvents(
  log: Log,
  metrics: LockdMetrics,
  clusterLog: ClusterLog,
  warnIfEpochAhead: () => void,
): ClusterOptions["events"] {
  // A store that is down fails every renewal and retry: one line per 10 s, with how many it stands for.
  const unavailable = new ReportLimiter<{ operation: string; error: string }>(({ operation, error }, count) =>
    log.warn({ operation, error, count }, "coordinator unavailable"),
  );
  return {
    // A standby tries for the lease every heartbeat while the active it cannot hear still holds it.
    leaseRefused: (holder) => log.debug({ holder: holder ?? null }, "ownership lease held by another node"),
    coordinatorUnavailable: (operation, error) =>
      unavailable.event({ operation, error: error instanceof Error ? error.message : String(error) }),
    roleChanged: (role, reason, epoch) => {
      metrics.roleChanged(role);
      clusterLog.roleChanged(role, reason, epoch);
      log.info({ role, reason, epoch: epoch.toString() }, "role changed");
      if (role === "active") warnIfEpochAhead();
    },
    following: (active) => {
      clusterLog.following(active);
      log.info({ active: active ?? null }, "following active");
    },
    peerRefused: (peer, reply) => log.error({ peer, reply }, "peer refused the cluster link"),
    // Rate-limited by the server (one line per 10 s, `count` says how many it stands for).
    peerRejected: (remote, node, reason, count) =>
      log.warn({ remote, node: node ?? null, reason, count }, "peer rejected"),
    peerLinkDropped: (peer, reason, count) => log.error({ peer, reason, count }, "peer link dropped"),
    serving: (epoch) => log.info({ epoch: epoch.toString() }, "serving"),
    // One line per change (a peer that flaps logs each flap), never one per heartbeat.
    peerLiveness: (peer, live, role) => {
      clusterLog.peerLiveness(peer, live, role);
      if (live) log.info({ peer, role: role ?? null }, "peer live");
      else log.warn({ peer, role: role ?? null }, "peer lost");
    },
    epochRefused: (from, epoch, reason) =>
      log.error({ from, epoch: epoch.toString(), reason }, "epoch refused"),
    stalled: (gapMs, role) =>
      log.warn(
        { gapMs, role },
        role === "active"
          ? "this process stalled: holding grants until the cluster confirms this node is still the active"
          : "this process stalled: listening for one peer timeout before it may promote",
      ),
  };
}

function statusHistory(server: LockServer): StatusHistory {
  const node = server.node;
  return new StatusHistory({
    grants: () => node.counters.grants,
    replicatedGrants: () => server.cluster?.replicatedGrants ?? 0,
    handoffs: () => node.counters.handoffs,
    keysHeld: () => node.keyCount,
    waiters: () => node.waiterCount,
  });
}

/** SIGINT and SIGTERM stop gracefully (a second one exits at once); SIGHUP reloads the TLS files. */
function handleSignals(log: Log, close: () => Promise<void>, reload: () => void): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "stopping");
    await close();
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // Node's default for SIGHUP is to die at once: no graceful stop, no handoff, every lock dropped.
  // A reload habit (`systemctl reload`, `kill -HUP`) must never stop a lock service: SIGHUP only
  // reads the TLS files again (tls-reload.ts), which is all lockd can change without a restart.
  process.on("SIGHUP", reload);
}

function logReady(
  log: Log,
  config: LockdConfig,
  server: LockServer,
  extra: { adminPort: number | null; directWrites: boolean },
): void {
  log.info(
    {
      version,
      port: server.port,
      listen: `${config.listen.host}:${server.port}`,
      advertise: server.node.advertise,
      dataDir: config.dataDir,
      epoch: server.node.epoch.toString(),
      adminPort: extra.adminPort,
      tls: config.tls !== undefined,
      auth: config.authToken !== undefined,
      peerAuth: config.peers ? config.peerToken !== undefined : null,
      adminAuth: config.adminToken !== undefined,
      peers: config.peers ?? null,
      fastIo: config.fastIo ? (extra.directWrites ? "reads and writes" : "reads") : "off",
    },
    "lockd ready",
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`lockd: ${error instanceof Error ? error.message : String(error)}\n`);
  // A data directory that cannot be trusted is a configuration problem for the operator to fix.
  process.exit(error instanceof EpochStoreError ? 2 : 1);
});
