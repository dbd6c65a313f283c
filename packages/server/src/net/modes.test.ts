import { describe, expect, it } from "vitest";
import { client, serve } from "./serve.test.data.js";

/** The lock-mode verbs (`Q`, `W`) over real sockets: replies, errors, and the rolling-upgrade guard. */
describe("Q and W over real sockets", () => {
  it("answers grants with their slot, queues a writer behind readers, and refuses mismatches", async () => {
    const server = await serve();
    const c = await client(server);
    expect(await c.request("Q doc s 30 0 r1")).toMatch(/^Q doc \d+ - r1$/);
    expect(await c.request("W doc s 30 r2")).toMatch(/^W doc \d+ - r2$/);
    expect(await c.request("W doc x 30 w0")).toBe("N doc w0");
    expect(await c.request("Q sem p2 30 0 p1")).toMatch(/^Q sem \d+ 0 p1$/);
    expect(await c.request("Q sem p2 30 0 p2")).toMatch(/^Q sem \d+ 1 p2$/);
    expect(await c.request("Q sem p3 30 0 p3")).toMatch(/^E Q sem LIMIT_MISMATCH p3 limit=2: /);
    expect(await c.request("A sem 30 0 p4")).toMatch(/^E A sem KIND_MISMATCH p4 /);
    expect(await c.request("Q sem p2 30 0.05 p5")).toBe("T sem p5");
  });

  it("refuses shared holders and permits, not exclusive locks, while a cluster node cannot replicate them", async () => {
    const server = await serve();
    const c = await client(server);
    server.node.lockModesRefusal = () => "the cluster node 10.0.0.9:7420 runs an older lockd";
    expect(await c.request("Q doc s 30 0 r1")).toMatch(
      /^E Q doc LOCK_MODES_UNAVAILABLE r1 the cluster node 10\.0\.0\.9:7420 /,
    );
    expect(await c.request("W sem p2 30 p1")).toMatch(/^E W sem LOCK_MODES_UNAVAILABLE p1 /);
    expect(await c.request("Q doc x 30 0 x1")).toMatch(/^Q doc \d+ - x1$/);
    server.node.lockModesRefusal = () => undefined;
    expect(await c.request("W sem p2 30 p2")).toMatch(/^W sem \d+ 0 p2$/);
  });
});
