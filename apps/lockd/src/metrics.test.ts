import { describe, expect, it } from "vitest";
import { LockdMetrics } from "./metrics.js";

describe("lockd metrics", () => {
  it("names the Node process metrics lockd_process_* and lockd_nodejs_*, the prefix said once", async () => {
    const text = await new LockdMetrics().registry.metrics();
    const names = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!));
    expect(names).toContain("lockd_process_cpu_user_seconds_total");
    expect(names).toContain("lockd_process_resident_memory_bytes");
    expect(names).toContain("lockd_nodejs_eventloop_lag_seconds");
    for (const name of names) {
      expect(name).toMatch(/^lockd_/);
      expect(name).not.toMatch(/^lockd_process_(process|nodejs)_/);
    }
  });
});
