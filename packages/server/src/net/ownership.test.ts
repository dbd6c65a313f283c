import { describe, expect, it } from "vitest";
import { client, serve } from "./serve.test.data.js";

const tokenOf = (line: string) => BigInt(line.split(" ")[2]!);

/**
 * Releases and extensions need proof of ownership: tokens count up by one, so the token alone is
 * guessable (a tester released another client's lock on the first guess, its own token minus 1).
 */
describe("who may release or extend a lock", () => {
  it("a guessed token from another connection releases and extends nothing: NOT_OWNER", async () => {
    const server = await serve();
    const victim = await client(server);
    const attacker = await client(server);
    const held = tokenOf(await victim.request("A payments:7 30 0 k9f3.1.5e0d1c2b3a4f5e6d"));
    const own = tokenOf(await attacker.request("A other 30 0"));
    // The tester's guess: its own token minus one.
    expect(own - 1n).toBe(held);
    expect(await attacker.request(`R payments:7 ${held}`)).toMatch(/^E R payments:7 NOT_OWNER - /);
    expect(await attacker.request(`X payments:7 ${held} 1`)).toMatch(/^E X payments:7 NOT_OWNER - /);
    expect(await attacker.request(`R payments:7 ${held} k9f3.1.0000000000000000`)).toMatch(
      /^E R payments:7 NOT_OWNER k9f3\.1\.0000000000000000 /,
    );
    // Nothing changed: the key is still held by the victim's token, with its lease.
    expect(await attacker.request("Y payments:7 30")).toBe("N payments:7");
    expect(await victim.request(`R payments:7 ${held}`)).toBe("R payments:7 1");
  });

  it("the holder proves it on another connection with the acquire's request id (a reconnect)", async () => {
    const server = await serve();
    const first = await client(server);
    const token = tokenOf(await first.request("A jobs:1 30 0 job-1"));
    first.close();
    const again = await client(server);
    expect(await again.request(`X jobs:1 ${token} 60 job-1`)).toBe("X jobs:1 1");
    expect(await again.request(`R jobs:1 ${token} job-1`)).toBe("R jobs:1 1");
    // A stale token is still just `0`, with or without an id.
    expect(await again.request(`R jobs:1 ${token} job-1`)).toBe("R jobs:1 0");
    expect(await again.request(`R jobs:1 ${token}`)).toBe("R jobs:1 0");
  });

  it("a waiter granted by handoff owns the lock on its own connection, not the releaser's", async () => {
    const server = await serve();
    const holder = await client(server);
    const waiter = await client(server);
    const first = tokenOf(await holder.request("A k 30 0"));
    waiter.send("A k 30 0");
    expect(await waiter.request("P queued")).toBe("P queued");
    expect(await holder.request(`R k ${first}`)).toBe("R k 1");
    const handed = tokenOf(await waiter.next());
    expect(await holder.request(`R k ${handed}`)).toMatch(/^E R k NOT_OWNER /);
    expect(await waiter.request(`R k ${handed}`)).toBe("R k 1");
  });
});
