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
  /** Set while the node's epoch runs ahead of its clock (lockd's `/status`; absent before it). */
  readonly epochAhead?: {
    readonly aheadSeconds: number;
    readonly servingFrom: string;
    readonly clockCatchesUpAt: string;
  } | null;
  /** With `--coordinator` (lockd's `/status`; null without one, absent before it). */
  readonly coordinator?: CoordinatorStatus | null;
  /** With `--slot-map` (lockd's `/status`; null without one, absent before it). */
  readonly slots?: SlotsStatus | null;
}

/** A node's cluster and the slot map it serves by (apps/lockd/src/admin.ts). */
export interface SlotsStatus {
  readonly cluster: string;
  readonly map: {
    readonly version: string;
    readonly ranges: ReadonlyArray<{ from: number; to: number; cluster: string; movingTo: string | null }>;
  } | null;
}

/** The coordinator as one node's `/status` describes it (apps/lockd/src/admin.ts). */
export interface CoordinatorStatus {
  readonly store: string;
  readonly cluster: string;
  readonly leaseHolder?: string | null;
  readonly leaseRemainingMs?: number | null;
  readonly holderError?: string;
  readonly lastEpoch: string | null;
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
  readonly lastRole: string | null;
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
  /** The coordinator line: the store, who holds the cluster's lease by it, the last epoch taken. */
  readonly coordinator: string | null;
  /** The slot map line: its version, this cluster's share, every range (several clusters, one key space). */
  readonly slots: string | null;
  readonly nodes: readonly NodeRow[];
  readonly notes: readonly string[];
}

/**
 * Merges what every node answered into one row per node (two targets that turn out to be the same
 * node, by the address it advertises, are one row). Peers that only appear in a cluster's peer list
 * (not probed) get a row too, so a node nobody asked for is not missing from the picture.
 *
 * Only what live nodes say now counts: a node that did not answer is DOWN with no role (`lastRole`
 * keeps the one the cluster last heard), and the active is decided by `decideActive` from the nodes
 * that answered, never from a standby's memory of an active that no longer answers. Liveness,
 * priority and lag come from that active's peer list, or, with none answering, from the first node
 * that answered with one.
 */
export function statusView(targets: readonly Target[]): StatusView {
  const rows = mergeSameNode(targets.map(targetRow));
  const statuses = new Map<string, AdminStatus>();
  for (const target of targets) {
    const status = answerOf(target.status)?.status;
    if (status !== undefined && !statuses.has(status.node)) statuses.set(status.node, status);
  }
  const answered = rows.filter((row) => row.state === "up");
  const clusterView =
    answered
      .filter((row) => row.role === "active")
      .map((row) => statuses.get(row.node))
      .find((status) => status?.cluster) ??
    answered.map((row) => statuses.get(row.node)).find((status) => status?.cluster);
  const peers = new Map((clusterView?.cluster?.peers ?? []).map((peer) => [peer.address, peer]));
  const viewed = rows.map((row) => withClusterView(row, peers.get(row.node)));
  for (const peer of peers.values()) {
    if (!viewed.some((row) => row.node === peer.address)) viewed.push(unprobedRow(peer));
  }
  const decision = decideActive(viewed, followedBy(targets));
  const nodes = viewed.map((row) =>
    row.role === "active" && row.node !== decision.active ? { ...row, role: "rival" } : row,
  );
  return {
    active: decision.active,
    coordinator: coordinatorLine(decision.active, statuses),
    slots: slotsLine(decision.active, statuses),
    nodes,
    notes: [...decision.notes, ...epochAheadNotes(statuses)],
  };
}

/** What the active (else any node that answered) says of the slot map; null without one. */
function slotsLine(active: string | null, statuses: ReadonlyMap<string, AdminStatus>): string | null {
  const described =
    (active === null ? undefined : statuses.get(active)?.slots) ??
    [...statuses.values()].find((status) => status.slots)?.slots;
  if (!described) return null;
  const { cluster, map } = described;
  if (map === null) return `slots: cluster ${cluster}, waiting for the slot map from the coordinator`;
  const own = map.ranges
    .filter((range) => range.cluster === cluster)
    .reduce((sum, range) => sum + range.to - range.from + 1, 0);
  const ranges = map.ranges
    .map(
      ({ from, to, cluster: owner, movingTo }) =>
        `${from}-${to} ${owner}${movingTo ? ` (moving to ${movingTo})` : ""}`,
    )
    .join(", ");
  return `slots: map v${map.version}, cluster ${cluster} serves ${own} of 16384: ${ranges}`;
}

/** What the active (else any node that answered) says of the coordinator; null without one. */
function coordinatorLine(active: string | null, statuses: ReadonlyMap<string, AdminStatus>): string | null {
  const described =
    (active === null ? undefined : statuses.get(active)?.coordinator) ??
    [...statuses.values()].find((status) => status.coordinator)?.coordinator;
  if (!described) return null;
  const { store, cluster, leaseHolder, leaseRemainingMs, holderError, lastEpoch } = described;
  const lease =
    holderError !== undefined
      ? `lease unknown (${holderError})`
      : leaseHolder
        ? `lease held by ${leaseHolder.split(" ")[0]} for ${formatDuration(leaseRemainingMs ?? 0)} more`
        : "lease held by nobody";
  return `coordinator: ${store}, cluster ${cluster}: ${lease}; last epoch taken ${lastEpoch ?? "none"}`;
}

/** A node whose epoch runs ahead of its clock (an epoch file or a peer ahead of it): for the operator to check. */
function epochAheadNotes(statuses: ReadonlyMap<string, AdminStatus>): string[] {
  return [...statuses.values()].flatMap(({ node, epochAhead }) =>
    epochAhead
      ? [
          `${node}: its epoch is ${epochAhead.aheadSeconds} s ahead of its clock (check the clock): it grants from ${epochAhead.servingFrom}, and its clock catches up at ${epochAhead.clockCatchesUpAt}`,
        ]
      : [],
  );
}

function answerOf<T extends object>(probe: T | { readonly error: string } | undefined): T | undefined {
  return probe !== undefined && !("error" in probe) ? probe : undefined;
}

/** The active each node that answered follows (its `active` field), by node. */
function followedBy(targets: readonly Target[]): Map<string, string> {
  const follows = new Map<string, string>();
  for (const target of targets) {
    const fields = answerOf(target.info)?.fields;
    const status = answerOf(target.status)?.status;
    const node = fields?.get("node") ?? status?.node;
    const active = status?.active ?? fields?.get("active");
    if (node !== undefined && active != null && active !== "-") follows.set(node, active);
  }
  return follows;
}

/**
 * The active of this view, from the nodes that answered: the one node that says it is active; of
 * several (a partition, or a moment of a failover), the one most of the others follow, then the
 * newest epoch; with none answering, a peer lock did not ask that the cluster hears as active. A
 * node that did not answer is never the active, though its standbys still name it until their peer
 * timeout runs out: then the view has no active, and a note says whom the standbys still follow.
 */
function decideActive(
  rows: readonly NodeRow[],
  follows: ReadonlyMap<string, string>,
): { active: string | null; notes: string[] } {
  const claiming = rows.filter((row) => row.state !== "down" && row.role === "active");
  const votes = (row: NodeRow) => [...follows.values()].filter((active) => active === row.node).length;
  const ranked = [...claiming].sort((a, b) => votes(b) - votes(a) || compareEpochs(b.epoch, a.epoch));
  const chosen = ranked[0];
  if (chosen !== undefined) {
    const notes = ranked
      .slice(1)
      .map(
        (rival) => `${rival.node} also says it is active (a rival: the other nodes follow ${chosen.node})`,
      );
    return { active: chosen.node, notes };
  }
  const notes = [...new Set(follows.values())].map((active) => {
    const followers = [...follows].filter(([, named]) => named === active).map(([node]) => node);
    return `no node that answered is active: ${followers.join(", ")} still follow ${active}, which did not answer (a failover takes a peer timeout)`;
  });
  return { active: null, notes };
}

function compareEpochs(a: string | null, b: string | null): number {
  const left = BigInt(a ?? "0");
  const right = BigInt(b ?? "0");
  return left === right ? 0 : left > right ? 1 : -1;
}

/** Rows of the same node (its lock and its admin address asked unpaired) become one. */
function mergeSameNode(rows: readonly NodeRow[]): NodeRow[] {
  const merged: NodeRow[] = [];
  for (const row of rows) {
    const index = merged.findIndex((other) => other.node === row.node);
    if (index < 0) merged.push(row);
    else merged[index] = mergeRows(merged[index]!, row);
  }
  return merged;
}

/** Each field from the row that answered, or else the other; the errors of both. */
function mergeRows(first: NodeRow, second: NodeRow): NodeRow {
  const [main, extra] = first.state === "up" || second.state !== "up" ? [first, second] : [second, first];
  const filled = Object.fromEntries(
    Object.entries(main).map(([field, value]) => [field, value ?? extra[field as keyof NodeRow]]),
  ) as unknown as NodeRow;
  return { ...filled, errors: [...first.errors, ...second.errors] };
}

/** A probed node's row, from what it said itself. */
function targetRow(target: Target): NodeRow {
  const info = answerOf(target.info)?.fields;
  const status = answerOf(target.status)?.status;
  const errors = [target.info, target.status].flatMap((probe) =>
    probe !== undefined && "error" in probe ? [probe.error] : [],
  );
  const node = info?.get("node") ?? status?.node ?? target.lockAddress ?? target.adminAddress!;
  const role = status?.role ?? info?.get("role") ?? null;
  return {
    ...emptyRow(node, info !== undefined || status !== undefined ? "up" : "down"),
    role,
    lastRole: role,
    epoch: status?.epoch ?? info?.get("epoch") ?? null,
    keys: status?.keysHeld ?? number(info?.get("keys")),
    waiters: status?.waiters ?? number(info?.get("waiters")),
    connections: status?.connections ?? number(info?.get("connections")),
    uptimeMs: status?.uptimeMs ?? number(info?.get("uptime_ms")),
    grantsPerSecond: status?.grantsPerSecond ?? null,
    lockAddress: target.lockAddress ?? null,
    adminAddress: target.adminAddress ?? null,
    errors,
  };
}

/** The cluster's view of a probed node: priority, liveness, lag; the role it last heard if it is down. */
function withClusterView(row: NodeRow, peer: PeerStatus | undefined): NodeRow {
  if (peer === undefined) return row;
  return { ...row, ...clusterFields(peer), lastRole: row.state === "up" ? row.role : peer.role };
}

/** A peer nobody asked: as the cluster hears it; DOWN (with no role) when it does not hear it. */
function unprobedRow(peer: PeerStatus): NodeRow {
  return {
    ...emptyRow(peer.address, peer.live ? "unprobed" : "down"),
    role: peer.live ? peer.role : null,
    lastRole: peer.role,
    ...clusterFields(peer),
  };
}

function emptyRow(node: string, state: NodeRow["state"]): NodeRow {
  return {
    node,
    state,
    role: null,
    lastRole: null,
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

function number(text: string | undefined): number | null {
  return text === undefined || !/^\d+$/.test(text) ? null : Number(text);
}

/** The human-readable table, a header line first. `withAdmin`: the columns only /status fills. */
export function formatStatus(view: StatusView, withAdmin: boolean): string {
  const up = view.nodes.filter((row) => row.state === "up").length;
  const probed = view.nodes.filter((row) => row.lockAddress !== null || row.adminAddress !== null).length;
  const header =
    `active: ${view.active ?? "none"}    ${up} of ${probed} nodes answered` +
    (view.coordinator ? `\n${view.coordinator}` : "") +
    (view.slots ? `\n${view.slots}` : "");
  const columns = ["NODE", "STATE", "ROLE", "EPOCH", "KEYS", "WAITERS", "CONNS", "UPTIME"];
  if (withAdmin) columns.push("LIVE", "LAG", "GRANTS/S");
  const rows = view.nodes.map((row) => {
    const cells = [
      row.node,
      row.state === "up" ? "up" : row.state === "down" ? "DOWN" : "-",
      // A node that did not answer has no role now; the one the cluster last heard, in words.
      row.role ?? (row.lastRole !== null ? `was ${row.lastRole}` : "-"),
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
  const notes = [...view.notes, ...view.nodes.flatMap((row) => row.errors)];
  return [header, "", formatTable(columns, rows), ...(notes.length > 0 ? ["", ...notes] : [])].join("\n");
}

function cell(value: number | null): string {
  return value === null ? "-" : String(value);
}
