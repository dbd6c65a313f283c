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
      // Not asked, and the active does not hear it: down, with no role.
      ["c:1", "down", null, 2, false, null],
    ]);
    expect(view.nodes[1]!.grantsPerSecond).toBe(12.5);
  });

  it("notes a node whose epoch runs ahead of its clock (lockd's /status epochAhead)", () => {
    const ahead = adminStatus("a:1", "active", null);
    const status = {
      ...ahead.status,
      epochAhead: {
        aheadSeconds: 3600,
        servingFrom: "2026-12-02T10:00:04.000Z",
        clockCatchesUpAt: "2026-12-02T11:00:00.000Z",
      },
    };
    const view = statusView([
      { lockAddress: "a:1", adminAddress: "a:2", info: info("a:1", "active"), status: { status } },
    ]);
    expect(view.notes).toEqual([
      "a:1: its epoch is 3600 s ahead of its clock (check the clock): it grants from 2026-12-02T10:00:04.000Z, and its clock catches up at 2026-12-02T11:00:00.000Z",
    ]);
    expect(formatStatus(view, true)).toContain("3600 s ahead of its clock");
  });

  it("says who holds the cluster's lease by the coordinator, as the active reports it", () => {
    const active = adminStatus("a:1", "active", null);
    const coordinator = {
      store: "etcd 127.0.0.1:2379/lock",
      cluster: "eu-1",
      leaseHolder: "a:1 5f2c",
      leaseRemainingMs: 1500,
      lastEpoch: "42",
    };
    const view = statusView([
      {
        lockAddress: "a:1",
        adminAddress: "a:2",
        info: info("a:1", "active"),
        status: { status: { ...active.status, coordinator } },
      },
    ]);
    expect(view.coordinator).toBe(
      "coordinator: etcd 127.0.0.1:2379/lock, cluster eu-1: lease held by a:1 for 1.5s more; last epoch taken 42",
    );
    expect(formatStatus(view, true).split("\n")[1]).toBe(view.coordinator);
    expect(statusView(ONE_UP_ONE_DOWN).coordinator).toBeNull();
  });

  it("shows the slot map the active serves by, its cluster's share and every range", () => {
    const active = adminStatus("a:1", "active", null);
    const slots = {
      cluster: "east",
      map: {
        version: "7",
        ranges: [
          { from: 0, to: 99, cluster: "east", movingTo: "west" },
          { from: 100, to: 8191, cluster: "east", movingTo: null },
          { from: 8192, to: 16383, cluster: "west", movingTo: null },
        ],
      },
    };
    const target = (status: object) => [
      {
        lockAddress: "a:1",
        adminAddress: "a:2",
        info: info("a:1", "active"),
        status: { status: { ...active.status, ...status } },
      },
    ];
    const view = statusView(target({ slots }));
    expect(view.slots).toBe(
      "slots: map v7, cluster east serves 8192 of 16384: 0-99 east (moving to west), 100-8191 east, 8192-16383 west",
    );
    expect(formatStatus(view, true).split("\n")[1]).toBe(view.slots);
    expect(statusView(target({ slots: { cluster: "east", map: null } })).slots).toBe(
      "slots: cluster east, waiting for the slot map from the coordinator",
    );
    expect(statusView(ONE_UP_ONE_DOWN).slots).toBeNull();
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

describe("statusView decides the active from what the live nodes say", () => {
  const down = (address: string): Target => ({
    lockAddress: address,
    adminAddress: undefined,
    info: { error: `lockd ${address}: connection closed before the answer` },
    status: undefined,
  });
  const up = (address: string, role: string, active: string): Target => ({
    lockAddress: address,
    adminAddress: undefined,
    info: info(address, role, active),
    status: undefined,
  });

  it("right after a kill, the standbys still name the dead node: it is not called the active", () => {
    const view = statusView([down("a:1"), up("b:1", "standby", "a:1"), up("c:1", "standby", "a:1")]);
    expect(view.active).toBeNull();
    expect(view.nodes[0]).toMatchObject({ node: "a:1", state: "down", role: null });
    expect(view.notes).toEqual([
      "no node that answered is active: b:1, c:1 still follow a:1, which did not answer (a failover takes a peer timeout)",
    ]);
    expect(formatStatus(view, false).split("\n")[0]).toBe("active: none    2 of 3 nodes answered");
  });

  it("after the failover the dead node is DOWN with its last role, not a second active row", () => {
    const peers = [
      { ...peer("a:1", 0, false, null), self: false },
      { ...peer("b:1", 1, true, null), self: true, role: "active" },
      peer("c:1", 2, true, 0),
    ];
    const targets: Target[] = [
      { ...down("a:1"), adminAddress: "a:2", status: { error: "admin server a:2: ECONNREFUSED" } },
      {
        lockAddress: "b:1",
        adminAddress: "b:2",
        info: info("b:1", "active", "b:1"),
        status: adminStatus("b:1", "active", peers),
      },
      up("c:1", "standby", "b:1"),
    ];
    const view = statusView(targets);
    expect(view.active).toBe("b:1");
    expect(view.nodes.filter((row) => row.role === "active").map((row) => row.node)).toEqual(["b:1"]);
    expect(view.nodes[0]).toMatchObject({
      node: "a:1",
      state: "down",
      role: null,
      lastRole: "active",
      live: false,
    });
    const table = formatStatus(view, true);
    expect(table).toMatch(/^a:1 +DOWN +was active +- /m);
    // One row whose ROLE is active (the dead node's says "was active").
    expect(table.match(/^\S+ +\S+ +active /gm)).toEqual([expect.stringMatching(/^b:1 /)]);
  });

  it("a peer nobody asked that the cluster does not hear is down too, whatever role it last had", () => {
    const peers = [peer("a:1", 0, false, null), { ...peer("b:1", 1, true, null), role: "active" }];
    const targets: Target[] = [
      {
        lockAddress: undefined,
        adminAddress: "b:2",
        info: undefined,
        status: adminStatus("b:1", "active", peers),
      },
    ];
    const view = statusView(targets);
    expect(view.nodes.map((row) => [row.node, row.state, row.role, row.lastRole])).toEqual([
      ["b:1", "up", "active", "active"],
      ["a:1", "down", null, "active"],
    ]);
  });

  it("two live nodes that both say active: the one the others follow is the active, the other a rival", () => {
    const view = statusView([
      up("a:1", "active", "a:1"),
      up("b:1", "active", "b:1"),
      up("c:1", "standby", "b:1"),
    ]);
    expect(view.active).toBe("b:1");
    expect(view.nodes.map((row) => [row.node, row.role])).toEqual([
      ["a:1", "rival"],
      ["b:1", "active"],
      ["c:1", "standby"],
    ]);
    expect(view.notes).toEqual(["a:1 also says it is active (a rival: the other nodes follow b:1)"]);
  });

  it("one node answering on both of its addresses, unpaired, is one row", () => {
    const view = statusView([
      up("a:1", "active", "a:1"),
      {
        lockAddress: undefined,
        adminAddress: "a:2",
        info: undefined,
        status: adminStatus("a:1", "active", null),
      },
    ]);
    expect(view.nodes).toHaveLength(1);
    expect(view.nodes[0]).toMatchObject({
      node: "a:1",
      lockAddress: "a:1",
      adminAddress: "a:2",
      grantsPerSecond: 12.5,
    });
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
