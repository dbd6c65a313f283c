import { Socket } from "node:net";
import { afterEach, expect, it, vi } from "vitest";

afterEach(() => {
  vi.restoreAllMocks();
});

// process.binding is deprecated (DEP0111): under --pending-deprecation --throw-deprecation the call
// kills the process a tick later, whatever catches it. Only code that opts into the direct path may
// pay that, not everything that imports the package.
it("importing the package does not call process.binding; the first direct writer probes, once", async () => {
  const binding = vi.spyOn(process as unknown as { binding(name: string): unknown }, "binding");
  vi.resetModules();
  const { SocketWriter } = await import("./index.js");
  expect(binding).not.toHaveBeenCalled();
  expect(new SocketWriter(new Socket(), () => {}, { direct: false }).direct).toBe(false);
  expect(binding).not.toHaveBeenCalled();
  const first = new SocketWriter(new Socket(), () => {});
  const second = new SocketWriter(new Socket(), () => {});
  expect(binding).toHaveBeenCalledTimes(1);
  expect(binding).toHaveBeenCalledWith("stream_wrap");
  expect([first.direct, second.direct]).toEqual([true, true]);
});
