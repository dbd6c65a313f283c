import { formatDuration } from "./duration.js";
import { formatTable } from "./table.js";

/** What `GET /status` answers (apps/lockd/src/admin.ts `nodeStatus`); only the fields lock reads. */
export interface AdminStatus {
  readonly node: string;
  readonly role: string;
  readonly active: string | null;
  readonly epoch: string;
  readonly uptimeMs: number;
  readonly connections: number;
  readonly keysHeld: number;
  readonly waiters: number;
  readonly grantsPerSecond: number;
  readonly cluster: { readonly peers: readonly PeerStatus[] } | null;
}

export interface PeerStatus {
  readonly address: string;
  readonly priority: number;
  readonly self: boolean;
  readonly role: string | null;
  readonly live: boolean;
  readonly replicationLag: { readonly ops: number; readonly sinceAckMs: number } | null;
}

/**
 * One node as lock probed it: the lock address (`I`) and the admin address (`GET /status`) that
 * belong to it, and what each answered. `error` is why a probe got no answer.
 */
export interface Target {
  readonly lockAddress: string | undefined;
  readonly adminAddress: string | undefined;
  readonly info: { readonly fields: ReadonlyMap<string, string> } | { readonly error: string } | undefined;
  readonly status: { readonly status: AdminStatus } | { readonly error: string } | undefined;
}

/** One row of `lock status`; `--json` prints these as they are. */
export interface NodeRow {
  /** The node's advertised address; the address lock tried, for a node that did not answer. */
  readonly node: string;
  /** "up": it answered; "down": nothing lock asked answered; "unprobed": known only from a peer list. */
  readonly state: "up" | "down" | "unprobed";
  readonly role: string | null;
  readonly epoch: string | null;
  readonly keys: number | null;
  readonly waiters: number | null;
  readonly connections: number | null;
  readonly uptimeMs: number | null;
  readonly grantsPerSecond: number | null;
  /** The cluster's view of the node (its priority; whether the active, or a node that answered, hears it). */
  readonly priority: number | null;
  readonly live: boolean | null;
  /** On a standby: replication operations the active has not had acknowledged. */
  readonly replicationLagOps: number | null;
  readonly lockAddress: string | null;
  readonly adminAddress: string | null;
  readonly errors: readonly string[];
}

export interface StatusView {
  readonly active: string | null;
  readonly nodes: readonly NodeRow[];
}

/**
 * Merges what every node answered into one row per node. Peers that only appear in a cluster's
 * peer list (not probed) get a row too, so a node nobody asked for is not missing from the picture.
 * Liveness, priority and lag come from the active's peer list, or, with no active answering, from
 * the first node that answered with one.
 */
export function statusView(targets: readonly Target[]): StatusView {
  const statuses = targets.flatMap((target) =>
    target.status !== undefined && "status" in target.status ? [target.status.status] : [],
  );
  const clusterView =
    statuses.find((status) => status.role === "active" && status.cluster) ?? statuses.find((s) => s.cluster);
  const peers = new Map((clusterView?.cluster?.peers ?? []).map((peer) => [peer.address, peer]));
  const rows: NodeRow[] = targets.map((target) => targetRow(target, peers));
  for (const peer of peers.values()) {
    if (rows.some((row) => row.node === peer.address)) continue;
    rows.push({
      ...emptyRow(peer.address, "unprobed"),
      role: peer.role,
      ...clusterFields(peer),
    });
  }
  const answered = rows.filter((row) => row.state === "up");
  const active =
    answered.find((row) => row.role === "active")?.node ??
    statuses.find((status) => status.active !== null)?.active ??
    firstActiveFromInfo(targets);
  return { active: active ?? null, nodes: rows };
}

function targetRow(target: Target, peers: ReadonlyMap<string, PeerStatus>): NodeRow {
  const info = target.info !== undefined && "fields" in target.info ? target.info.fields : undefined;
  const status = target.status !== undefined && "status" in target.status ? target.status.status : undefined;
  const errors = [target.info, target.status].flatMap((probe) =>
    probe !== undefined && "error" in probe ? [probe.error] : [],
  );
  const node = info?.get("node") ?? status?.node ?? target.lockAddress ?? target.adminAddress!;
  const base = emptyRow(node, info !== undefined || status !== undefined ? "up" : "down");
  const peer = peers.get(node);
  return {
    ...base,
    role: status?.role ?? info?.get("role") ?? peer?.role ?? null,
    epoch: status?.epoch ?? info?.get("epoch") ?? null,
    keys: status?.keysHeld ?? number(info?.get("keys")),
    waiters: status?.waiters ?? number(info?.get("waiters")),
    connections: status?.connections ?? number(info?.get("connections")),
    uptimeMs: status?.uptimeMs ?? number(info?.get("uptime_ms")),
    grantsPerSecond: status?.grantsPerSecond ?? null,
    ...(peer ? clusterFields(peer) : {}),
    lockAddress: target.lockAddress ?? null,
    adminAddress: target.adminAddress ?? null,
    errors,
  };
}

function emptyRow(node: string, state: NodeRow["state"]): NodeRow {
  return {
    node,
    state,
    role: null,
    epoch: null,
    keys: null,
    waiters: null,
    connections: null,
    uptimeMs: null,
    grantsPerSecond: null,
    priority: null,
    live: null,
    replicationLagOps: null,
    lockAddress: null,
    adminAddress: null,
    errors: [],
  };
}

function clusterFields(peer: PeerStatus): Pick<NodeRow, "priority" | "live" | "replicationLagOps"> {
  return { priority: peer.priority, live: peer.live, replicationLagOps: peer.replicationLag?.ops ?? null };
}

function firstActiveFromInfo(targets: readonly Target[]): string | undefined {
  for (const target of targets) {
    const active =
      target.info !== undefined && "fields" in target.info ? target.info.fields.get("active") : undefined;
    if (active !== undefined && active !== "-") return active;
  }
  return undefined;
}

function number(text: string | undefined): number | null {
  return text === undefined || !/^\d+$/.test(text) ? null : Number(text);
}

/** The human-readable table, a header line first. `withAdmin`: the columns only /status fills. */
export function formatStatus(view: StatusView, withAdmin: boolean): string {
  const up = view.nodes.filter((row) => row.state === "up").length;
  const probed = view.nodes.filter((row) => row.state !== "unprobed").length;
  const header = `active: ${view.active ?? "none"}    ${up} of ${probed} nodes answered`;
  const columns = ["NODE", "STATE", "ROLE", "EPOCH", "KEYS", "WAITERS", "CONNS", "UPTIME"];
  if (withAdmin) columns.push("LIVE", "LAG", "GRANTS/S");
  const rows = view.nodes.map((row) => {
    const cells = [
      row.node,
      row.state === "up" ? "up" : row.state === "down" ? "DOWN" : "-",
      row.role ?? "-",
      row.epoch ?? "-",
      cell(row.keys),
      cell(row.waiters),
      cell(row.connections),
      row.uptimeMs === null ? "-" : formatDuration(row.uptimeMs),
    ];
    if (withAdmin) {
      cells.push(
        row.live === null ? "-" : row.live ? "yes" : "NO",
        cell(row.replicationLagOps),
        cell(row.grantsPerSecond),
      );
    }
    return cells;
  });
  // Each error names the address that gave it.
  const notes = view.nodes.flatMap((row) => row.errors);
  return [header, "", formatTable(columns, rows), ...(notes.length > 0 ? ["", ...notes] : [])].join("\n");
}

function cell(value: number | null): string {
  return value === null ? "-" : String(value);
}
