import { once } from "node:events";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { client, onCleanup, serve } from "./serve.test.data.js";

const tokenOf = (line: string) => BigInt(line.split(" ")[2]!);

describe("LockServer over real sockets", () => {
  it("serves the nc session from docs/protocol.md", async () => {
    const c = await client(await serve());
    expect(await c.request("P hello")).toBe("P hello");
    const granted = await c.request("A orders:42 30 0 job-1");
    expect(granted).toMatch(/^A orders:42 \d+ job-1$/);
    const token = tokenOf(granted);
    expect(await c.request("Y orders:42 30")).toBe("N orders:42");
    expect(await c.request("A orders:42 10 0.05 job-2")).toBe("T orders:42 job-2");
    expect(await c.request(`X orders:42 ${token} 60`)).toBe("X orders:42 1");
    expect(await c.request(`R orders:42 ${token}`)).toBe("R orders:42 1");
    expect(await c.request(`R orders:42 ${token}`)).toBe("R orders:42 0");
    expect(await c.request("A orders:42 -5 0")).toMatch(/^E A orders:42 BAD_DURATION - /);
    expect(await c.request("Z")).toMatch(/^E \? - BAD_SYNTAX - /);
    expect(await c.request("I")).toMatch(
      /^I version=\S+ role=active node=127\.0\.0\.1:\d+ active=\S+ epoch=\d+ keys=0 waiters=0 connections=1 watches=0 uptime_ms=\d+$/,
    );
  });

  it("pipelines requests across keys and answers each as it happens", async () => {
    const server = await serve();
    const holder = await client(server);
    const c = await client(server);
    const t1 = tokenOf(await holder.request("A k1 30 0"));
    // One write with many requests: k1 must wait, the others are answered at once.
    c.send("A k1 30 0 w1\nA k2 30 0 w2\nA k3 30 0 w3\nY k4 30 w4\nP x");
    const replies = [await c.next(), await c.next(), await c.next(), await c.next()];
    expect(replies.map((line) => line.split(" ").slice(0, 2).join(" "))).toEqual([
      "A k2",
      "A k3",
      "Y k4",
      "P x",
    ]);
    expect(await holder.request(`R k1 ${t1}`)).toBe("R k1 1");
    const handed = await c.next();
    expect(handed).toMatch(/^A k1 \d+ w1$/);
    expect(tokenOf(handed)).toBeGreaterThan(t1);
  });

  it("answers same-key acquires in send order with increasing tokens", async () => {
    const server = await serve();
    const c = await client(server);
    const n = 50;
    c.send(Array.from({ length: n }, (_, i) => `A same 30 0 r${i}`).join("\n"));
    let previous = 0n;
    for (let i = 0; i < n; i++) {
      // Releasing hands the key to the next waiter in the same step: its grant precedes the R reply.
      const line = await c.next();
      expect(line).toMatch(new RegExp(`^A same \\d+ r${i}$`));
      expect(tokenOf(line)).toBeGreaterThan(previous);
      if (i > 0) expect(await c.next()).toBe("R same 1");
      previous = tokenOf(line);
      c.send(`R same ${previous}`);
    }
    expect(await c.next()).toBe("R same 1");
  });

  it("a retried acquire (same id, new connection) finds its own grant", async () => {
    const server = await serve();
    const first = await client(server);
    const granted = await first.request("A job 30 0 call-7");
    first.close();
    const second = await client(server);
    expect(await second.request("A job 30 0 call-7")).toBe(granted);
    expect(await second.request("A job 30 0.05 call-8")).toBe("T job call-8");
  });

  it("cancels a queued acquire: the acquire gets T, the cancel says whether it was queued", async () => {
    const server = await serve();
    const holder = await client(server);
    const waiter = await client(server);
    const token = tokenOf(await holder.request("A k 30 0"));
    waiter.send("A k 30 0 job-3");
    await expect.poll(() => server.node.waiterCount).toBe(1);
    // The cancel may come over another connection (the client's first one may be gone).
    expect(await holder.request("C k job-3")).toBe("C k 1");
    expect(await waiter.next()).toBe("T k job-3");
    expect(await holder.request("C k job-3")).toBe("C k 0");
    expect(await holder.request(`R k ${token}`)).toBe("R k 1");
    expect(server.node.keyCount).toBe(0);
  });

  it("drops a closed connection's waiters but not its held locks", async () => {
    const server = await serve();
    const a = await client(server);
    const b = await client(server);
    const token = tokenOf(await a.request("A k 30 0 mine"));
    b.send("A k 30 0 gone");
    await expect.poll(() => server.node.waiterCount).toBe(1);
    b.close();
    await expect.poll(() => server.node.waiterCount).toBe(0);
    a.close();
    // Still held: the holder, back on a new connection, releases it with its acquire's id.
    const c = await client(server);
    expect(await c.request(`R k ${token} mine`)).toBe("R k 1");
  });

  it("reclaims an expired lease and hands it on", async () => {
    const server = await serve();
    const a = await client(server);
    const b = await client(server);
    const token = tokenOf(await a.request("A k 0.05 0"));
    const handed = await b.request("A k 30 0 next");
    expect(tokenOf(handed)).toBeGreaterThan(token);
    expect(await a.request(`R k ${token}`)).toBe("R k 0");
  });
});

describe("limits and bad input", () => {
  it("answers every decoder error and keeps the connection usable", async () => {
    const c = await client(await serve({ limits: { maxKeyBytes: 8, maxLineBytes: 64 } }));
    expect(await c.request("A 123456789 30 0 id1")).toMatch(/^E A - KEY_TOO_LONG id1 /);
    expect(await c.request(`A k 30 0 ${"x".repeat(70)}`)).toMatch(/^E \? - LINE_TOO_LONG - /);
    expect(await c.request("R k -1")).toMatch(/^E R k BAD_TOKEN - /);
    expect(await c.request("R k 18446744073709551616")).toMatch(/^E R k BAD_TOKEN - /);
    c.send(Buffer.from([0x41, 0x20, 0xff, 0xfe, 0x0a]));
    expect(await c.next()).toMatch(/BAD_ENCODING/);
    expect(await c.request("P ok")).toBe("P ok");
  });

  it("survives garbage bytes and a 10 MiB line without a newline", async () => {
    const server = await serve();
    const c = await client(server);
    const garbage = Buffer.alloc(256 * 1024);
    for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919 + 13) & 0xff;
    c.send(garbage);
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    for (let i = 0; i < 10; i++) c.send(chunk);
    c.send("\nP alive");
    for (;;) {
      const line = await c.next();
      if (line === "P alive") break;
      expect(line).toMatch(/^E /);
    }
    expect(server.connectionCount).toBe(1);
  });

  it("refuses leases and waits out of range", async () => {
    const c = await client(await serve({ limits: { maxLeaseMs: 60_000, maxWaitMs: 1_000 } }));
    expect(await c.request("A k 61 0 r1")).toMatch(/^E A k LEASE_OUT_OF_RANGE r1 /);
    expect(await c.request("A k 0 0")).toMatch(/^E A k LEASE_OUT_OF_RANGE - /);
    expect(await c.request("A k 10 2")).toMatch(/^E A k WAIT_OUT_OF_RANGE - /);
    expect(await c.request("X k 1 61")).toMatch(/^E X k LEASE_OUT_OF_RANGE - /);
    expect(await c.request("A k 10 0")).toMatch(/^A k \d+$/);
  });

  it("limits queued acquires per connection and per key, and keys held", async () => {
    const server = await serve({ limits: { maxPendingPerConnection: 2, maxWaitersPerKey: 3, maxKeys: 2 } });
    const c = await client(server);
    const d = await client(server);
    await c.request("A a 30 0");
    c.send("A a 30 0 1\nA a 30 0 2\nA a 30 0 3");
    expect(await c.next()).toMatch(/^E A a TOO_MANY_REQUESTS 3 /);
    d.send("A a 30 0 4\nA a 30 0 5");
    expect(await d.next()).toMatch(/^E A a TOO_MANY_WAITERS 5 /);
    await d.request("A b 30 0");
    expect(await d.request("A c 30 0")).toMatch(/^E A c TOO_MANY_KEYS - /);
    expect(await d.request("Y c 30")).toMatch(/^E Y c TOO_MANY_KEYS - /);
  });

  it("stops reading a client that does not read its replies, and serves it all once it does", async () => {
    let answered = 0;
    const observer = { request: () => answered++, granted() {}, error() {}, authFailed() {} };
    const server = await serve({ observer, limits: { writeHighWaterBytes: 64 * 1024 } });
    const socket = connect({ port: server.port, host: "127.0.0.1" });
    onCleanup(() => {
      socket.destroy();
    });
    await once(socket, "connect");
    socket.pause(); // never read, for now
    // 300,000 `I` requests: 600 KB that ask for ~45 MB of replies.
    const count = 300_000;
    socket.write("I\n".repeat(count));
    // Nothing announces that the server stopped reading: wait until the count stops moving.
    let last = -1;
    for (let still = 0; still < 5; still = answered === last ? still + 1 : 0) {
      last = answered;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Only what the kernel buffers and the 64 KiB high-water mark hold was answered.
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThan(count / 2);
    // Reading again drains the replies, the server resumes, and every request gets its answer.
    let lines = 0;
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      for (let i = chunk.indexOf("\n"); i >= 0; i = chunk.indexOf("\n", i + 1)) lines++;
    });
    socket.resume();
    while (lines < count) await once(socket, "data");
    expect(answered).toBe(count);
  });

  it("refuses connections over the limit with an error line, counted like any error, then closes", async () => {
    const errors: string[] = [];
    const observer = {
      request() {},
      granted() {},
      error: (code: string) => errors.push(code),
      authFailed() {},
    };
    const server = await serve({ observer, limits: { maxConnections: 1 } });
    const first = await client(server);
    expect(await first.request("P")).toBe("P");
    const extra = await client(server);
    expect(await extra.next()).toMatch(/^E \? - TOO_MANY_CONNECTIONS - /);
    expect(errors).toEqual(["TOO_MANY_CONNECTIONS"]);
    await extra.closed;
    expect(await first.request("P")).toBe("P");
  });

  it("closes idle connections but not ones waiting for a lock", async () => {
    const server = await serve({ limits: { idleTimeoutMs: 100 } });
    const holder = await client(server);
    await holder.request("A k 30 0");
    const waiting = await client(server);
    waiting.send("A k 30 0 w");
    expect(await holder.next()).toMatch(/^E \? - IDLE_TIMEOUT - /);
    await holder.closed;
    // Another idle connection opened after the waiter is closed for idleness; the waiter is not.
    const later = await client(server);
    expect(await later.next()).toMatch(/IDLE_TIMEOUT/);
    expect(waiting.socket.destroyed).toBe(false);
    expect(await waiting.request("P still-here")).toBe("P still-here");
  });

  it("requires authentication when a token is set, compared exactly", async () => {
    const server = await serve({ authToken: "s3cret", limits: { authTimeoutMs: 200 } });
    const c = await client(server);
    expect(await c.request("A k 30 0 r")).toMatch(/^E A k NOT_AUTHENTICATED r /);
    expect(await c.request("P")).toBe("P");
    expect(await (await client(server)).request("H s3cre")).toMatch(/^E H - AUTH_FAILED - /);
    expect(await c.request("H s3cret")).toBe("H");
    expect(await c.request("A k 30 0 r")).toMatch(/^A k \d+ r$/);
    const late = await client(server);
    expect(await late.next()).toMatch(/^E \? - AUTH_TIMEOUT - /);
    await late.closed;
  });

  it("answers queued acquires with SHUTTING_DOWN on close", async () => {
    const server = await serve();
    const c = await client(server);
    await c.request("A k 30 0");
    c.send("A k 30 0 w1");
    await expect.poll(() => server.node.waiterCount).toBe(1);
    const closing = server.close(1_000);
    expect(await c.next()).toMatch(/^E A k SHUTTING_DOWN w1 /);
    await closing;
  });
});
