import { describe, expect, it } from "vitest";
import type { ServerObserver } from "../observer.js";
import { client, serve } from "./serve.test.data.js";

const secret = "a-secret-of-24-characters";

describe("a wrong auth secret", () => {
  it("closes the connection, and nothing pipelined behind it runs", async () => {
    const server = await serve({ authToken: secret });
    const c = await client(server);
    c.send(`H wrong-guess\nH ${secret}\nA k 30 0`);
    expect(await c.next()).toMatch(/^E H - AUTH_FAILED - /);
    await c.closed;
    expect(c.buffered).toEqual([]);
    expect(server.node.keyCount).toBe(0);
  });

  it("is refused only after the delay, and reported to the observer without the secret", async () => {
    const failures: unknown[][] = [];
    let failed!: () => void;
    const reported = new Promise<void>((resolve) => {
      failed = resolve;
    });
    const observer: ServerObserver = {
      request() {},
      granted() {},
      error() {},
      authFailed(...args) {
        failures.push(args);
        failed();
      },
    };
    // A delay no test run reaches: the refusal must still be pending after another client's round trip.
    const server = await serve({ authToken: secret, observer, limits: { authFailureDelayMs: 60_000 } });
    const guesser = await client(server);
    guesser.send("H wrong-guess");
    await reported;
    const other = await client(server);
    expect(await other.request("P")).toBe("P");
    expect(guesser.buffered).toEqual([]);
    expect(guesser.socket.readableEnded).toBe(false);
    expect(failures).toEqual([[`127.0.0.1:${guesser.socket.localPort}`]]);
  });
});
