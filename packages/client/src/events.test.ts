import { describe, expect, it } from "vitest";
import { Emitter } from "./events.js";

describe("Emitter", () => {
  it("calls listeners in order, once for once(), never after off()", () => {
    const emitter = new Emitter();
    const seen: string[] = [];
    const always = (event: { address: string }) => seen.push(`always ${event.address}`);
    emitter.on("connect", always);
    emitter.once("connect", (event) => seen.push(`once ${event.address}`));
    const event = { address: "a:1", connection: 0, reconnect: false };
    emitter.emit("connect", event);
    emitter.emit("connect", { ...event, address: "b:1" });
    emitter.off("connect", always);
    emitter.emit("connect", event);
    expect(seen).toEqual(["always a:1", "once a:1", "always b:1"]);
    expect(emitter.listens("connect")).toBe(false);
  });

  it("a throwing listener does not stop the others; its error surfaces asynchronously", async () => {
    const emitter = new Emitter();
    const seen: number[] = [];
    emitter.on("close", () => {
      throw new Error("listener bug");
    });
    emitter.on("close", () => seen.push(2));
    const uncaught = new Promise<unknown>((resolve) => {
      const original = globalThis.queueMicrotask;
      globalThis.queueMicrotask = (task) => {
        globalThis.queueMicrotask = original;
        try {
          task();
        } catch (error) {
          resolve(error);
        }
      };
    });
    emitter.emit("close", {});
    expect(seen).toEqual([2]);
    expect(await uncaught).toEqual(new Error("listener bug"));
  });
});
