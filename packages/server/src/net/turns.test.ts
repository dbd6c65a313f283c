import type { RequestOp } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { NO_OBSERVER } from "../observer.js";
import { client, serve } from "./serve.test.data.js";

describe("a pipeline runs in turns", () => {
  it("answers every request of a long pipeline in order, and serves another connection between turns", async () => {
    const handled: RequestOp[] = [];
    let onFirst: (() => void) | undefined;
    const observer = {
      ...NO_OBSERVER,
      request: (op: RequestOp) => {
        handled.push(op);
        if (handled.length === 1) onFirst?.();
      },
    };
    const server = await serve({ observer, limits: { maxRequestsPerTurn: 10 } });
    const pipeliner = await client(server);
    const other = await client(server);
    // Once the pipeline's first request runs, the other connection's request reaches the kernel:
    // lockd reads it when the event loop next polls, which it does only if the pipeline yields.
    onFirst = () => other.send("I");
    const count = 100;
    pipeliner.send(Array.from({ length: count }, (_, i) => `P n${i}`).join("\n"));
    for (let i = 0; i < count; i++) expect(await pipeliner.next()).toBe(`P n${i}`);
    expect(await other.next()).toMatch(/^I /);
    const infoAt = handled.indexOf("I");
    expect(handled).toHaveLength(count + 1);
    expect(infoAt).toBeGreaterThanOrEqual(10); // not before the first turn...
    expect(infoAt).toBeLessThan(count); // ...and not after the whole pipeline
  });
});
