import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { RequestDecoder } from "./decoders.js";
import { detach } from "./detach.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("decoded keys and ids", () => {
  it("do not keep the chunk they were decoded from alive", () => {
    const decoder = new RequestDecoder();
    const padding = "P\n".repeat(30_000); // 60 KB of other requests in the same chunk
    const held: string[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 500; i++) {
      const [frame] = decoder.push(
        Buffer.from(`A a-fairly-long-key-name-${i} 30 0 request-id-number-${i}\n${padding}`),
      );
      if (frame === undefined || !("op" in frame) || frame.op !== "A") throw new Error("expected an acquire");
      held.push(frame.key, frame.id!);
    }
    gc();
    const perKey = (process.memoryUsage().heapUsed - before) / 500;
    // Retaining the chunk would cost about 60,000 bytes per key.
    expect(perKey).toBeLessThan(5_000);
    expect(held).toHaveLength(1000);
  });

  it("detach costs a copy of the characters and no view on top of it", () => {
    const source = Array.from({ length: 20_000 }, (_, i) => `request-id-${i}-`.padEnd(40, "x")).join(" ");
    const cut = Array.from({ length: 20_000 }, (_, i) => source.slice(41 * i, 41 * i + 40));
    const kept: string[] = new Array(cut.length);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < cut.length; i++) kept[i] = detach(cut[i]!);
    gc();
    const perString = (process.memoryUsage().heapUsed - before) / cut.length;
    // A flat 40-character string is 56 bytes; a view into a copy (the earlier way) was 88.
    expect(perString).toBeLessThan(72);
    expect(kept[7]).toBe(cut[7]);
  });

  it("detach returns an equal string", () => {
    const long = "x".repeat(100).slice(10, 60);
    expect(detach(long)).toBe(long);
    expect(detach("short")).toBe("short");
  });
});
