/**
 * The README's read-rule and permits examples (src/testing/readme/, which readme.test.ts holds equal to
 * the README), run, and held to the output their comments promise.
 */
import { describe, expect, it, vi } from "vitest";

async function printedBy(example: string): Promise<unknown[][]> {
  const printed: unknown[][] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args));
  try {
    await import(new URL(`testing/readme/${example}`, import.meta.url).href);
  } finally {
    log.mockRestore();
  }
  return printed;
}

describe("README examples", () => {
  it("the read rule: a stalled writer and a stalled reader refused", async () => {
    expect(await printedBy("read-rule.ts")).toEqual([
      ["read", 100],
      ["FENCE_NEWER_READ", 42n],
      ["FENCE_STALE_READ", 43n],
      ["balance", 90],
    ]);
  });

  it("permits: two slots accepted, the whole key refused", async () => {
    expect(await printedBy("permits.ts")).toEqual([
      ["tenant:7 slot 0", ["slot 1", "slot 0"]],
      ["FENCE_SLOT_MISMATCH"],
    ]);
  });
});
