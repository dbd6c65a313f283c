import { describe, expect, it } from "vitest";
import { type AdminStatus, formatStatus, type PeerStatus, statusView, type Target } from "./status-view.js";

const info = (node: string, role: string, active = "a:1") => ({
  fields: new Map([
    ["role", role],
    ["node", node],
    ["active", active],
    ["epoch", "77"],
    ["keys", "3"],
    ["waiters", "1"],
    ["connections", "4"],
    ["uptime_ms", "65000"],
  ]),
});
const peer = (address: string, priority: number, live: boolean, ops: number | null): PeerStatus => ({
  address,
  priority,
  self: priority === 0,
  role: priority === 0 ? "active" : "standby",
  live,
  replicationLag: ops === null ? null : { ops, sinceAckMs: 5 },
});
const adminStatus = (node: string, role: string, peers: PeerStatus[] | null): { status: AdminStatus } => ({
  status: {
    node,
    role,
    active: "a:1",
    epoch: "77",
    uptimeMs: 1000,
    connections: 2,
    keysHeld: 3,
    waiters: 0,
    grantsPerSecond: 12.5,
    cluster: peers && { peers },
  },
});

const ONE_UP_ONE_DOWN: Target[] = [
  { lockAddress: "a:1", adminAddress: undefined, info: info("a:1", "active"), status: undefined },
  {
    lockAddress: "b:1",
    adminAddress: undefined,
    info: { error: "lockd b:1: ECONNREFUSED" },
    status: undefined,
  },
];

describe("statusView", () => {
  it("one row per node from I alone; a node that did not answer is down, keyed by the address tried", () => {
    const view = statusView(ONE_UP_ONE_DOWN);
    expect(view.active).toBe("a:1");
    expect(view.nodes).toMatchObject([
      {
        node: "a:1",
        state: "up",
        role: "active",
        epoch: "77",
        keys: 3,
        waiters: 1,
        connections: 4,
        uptimeMs: 65000,
      },
      { node: "b:1", state: "down", role: null, errors: ["lockd b:1: ECONNREFUSED"] },
    ]);
  });

  it("takes liveness, priority and lag from the active's peer list, and adds the peers nobody asked", () => {
    const peers = [peer("a:1", 0, true, null), peer("b:1", 1, true, 4), peer("c:1", 2, false, null)];
    const targets: Target[] = [
      {
        lockAddress: "b:1",
        adminAddress: "b:2",
        info: info("b:1", "standby"),
        status: adminStatus("b:1", "standby", [peer("b:1", 1, true, null)]),
      },
      {
        lockAddress: "a:1",
        adminAddress: "a:2",
        info: info("a:1", "active"),
        status: adminStatus("a:1", "active", peers),
      },
    ];
    const view = statusView(targets);
    expect(
      view.nodes.map((row) => [row.node, row.state, row.role, row.priority, row.live, row.replicationLagOps]),
    ).toEqual([
      ["b:1", "up", "standby", 1, true, 4],
      ["a:1", "up", "active", 0, true, null],
      ["c:1", "unprobed", "standby", 2, false, null],
    ]);
    expect(view.nodes[1]!.grantsPerSecond).toBe(12.5);
  });

  it("with no answer at all: no active, every row down", () => {
    const view = statusView([
      {
        lockAddress: undefined,
        adminAddress: "a:2",
        info: undefined,
        status: { error: "admin server a:2: ECONNREFUSED" },
      },
    ]);
    expect(view).toMatchObject({ active: null, nodes: [{ node: "a:2", state: "down" }] });
  });
});

describe("formatStatus", () => {
  it("prints a header, the table (admin columns only with --admin) and the errors", () => {
    const view = statusView(ONE_UP_ONE_DOWN);
    expect(formatStatus(view, false)).toBe(
      [
        "active: a:1    1 of 2 nodes answered",
        "",
        "NODE  STATE  ROLE    EPOCH  KEYS  WAITERS  CONNS  UPTIME",
        "a:1   up     active  77     3     1        4      1m05s",
        "b:1   DOWN   -       -      -     -        -      -",
        "",
        "lockd b:1: ECONNREFUSED",
      ].join("\n"),
    );
    expect(formatStatus(view, true).split("\n")[2]).toMatch(/UPTIME {2}LIVE {2}LAG {2}GRANTS\/S$/);
  });
});
