import { describe, expect, it } from "vitest";
import { CLUSTER_LOG_SIZE, ClusterLog } from "./cluster-log.js";

function log() {
  const clock = { wall: 1_000_000 };
  const clusterLog = new ClusterLog(
    () => "b:1",
    () => clock.wall,
  );
  return { clock, clusterLog };
}

describe("ClusterLog", () => {
  it("keeps role and liveness changes newest first, at most CLUSTER_LOG_SIZE", () => {
    const { clock, clusterLog } = log();
    clusterLog.peerLiveness("a:1", true, "active");
    clock.wall += 1000;
    clusterLog.roleChanged("active", "no live active", 42n);
    expect(clusterLog.recent()).toEqual([
      { at: 1_001_000, kind: "role", node: "b:1", role: "active", reason: "no live active", epoch: "42" },
      { at: 1_000_000, kind: "peer", node: "a:1", live: true, role: "active" },
    ]);
    for (let i = 0; i < CLUSTER_LOG_SIZE + 5; i++) clusterLog.peerLiveness(`p:${i}`, false, undefined);
    const recent = clusterLog.recent();
    expect(recent).toHaveLength(CLUSTER_LOG_SIZE);
    expect(recent[0]).toMatchObject({ node: `p:${CLUSTER_LOG_SIZE + 4}`, live: false, role: null });
  });

  it("records whom this standby follows, so its page shows another node taking over", () => {
    const { clock, clusterLog } = log();
    clusterLog.following("a:1");
    clock.wall += 500;
    clusterLog.following(undefined);
    clock.wall += 500;
    clusterLog.following("c:1");
    expect(clusterLog.recent()).toEqual([
      { at: 1_001_000, kind: "follow", node: "b:1", active: "c:1" },
      { at: 1_000_500, kind: "follow", node: "b:1", active: null },
      { at: 1_000_000, kind: "follow", node: "b:1", active: "a:1" },
    ]);
  });
});
