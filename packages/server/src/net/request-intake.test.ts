import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { RequestIntake } from "./request-intake.js";

/** An intake over a socket that only records pauses, and a host that records each turn's requests. */
function intake(maxRequestsPerTurn: number) {
  const socket = {
    paused: false,
    pause() {
      this.paused = true;
    },
    resume() {
      this.paused = false;
    },
  };
  const ran: string[] = [];
  const feed = new RequestIntake(socket as unknown as Socket, maxRequestsPerTurn, {
    beginRun() {},
    runPart(part) {
      const lines = part
        .toString()
        .split("\n")
        .filter((line) => line !== "");
      ran.push(...lines);
      return lines.length;
    },
    endRun() {},
    closing: () => false,
    held: () => false,
  });
  return { socket, ran, feed };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const lines = (from: number, count: number) =>
  Buffer.from(Array.from({ length: count }, (_, i) => `P n${from + i}\n`).join(""));

describe("RequestIntake", () => {
  it("runs at most a turn's budget over all the reads of a turn, and the rest in later turns, in order", async () => {
    const { socket, ran, feed } = intake(10);
    // One poll of the event loop hands a busy socket several reads, each with fewer lines than
    // the budget: together they must not run more than it.
    for (let read = 0; read < 5; read++) feed.receive(lines(read * 4, 4));
    expect(ran).toHaveLength(10);
    expect(socket.paused).toBe(true);
    await nextTurn();
    expect(ran).toHaveLength(20);
    expect(ran).toEqual(Array.from({ length: 20 }, (_, i) => `P n${i}`));
    expect(socket.paused).toBe(false);
  });

  it("gives the next turn's reads the whole budget again", async () => {
    const { socket, ran, feed } = intake(10);
    feed.receive(lines(0, 6));
    await nextTurn();
    feed.receive(lines(6, 6));
    feed.receive(lines(12, 4));
    expect(ran).toHaveLength(16);
    expect(socket.paused).toBe(false);
  });
});
