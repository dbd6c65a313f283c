import { describe, expect, it } from "vitest";
import { client, serve } from "./serve.test.data.js";

describe("a release that hands the key over", () => {
  it.each([
    ["an exclusive lock", "A k 30 0 h", "A k 30 0 w", /^A k (\d+) h$/],
    ["a semaphore's permit", "Q k p1 30 0 h", "Q k p1 30 0 w", /^Q k (\d+) 0 h$/],
  ])("writes the waiter's grant before the releaser's reply (%s)", async (_kind, hold, wait, granted) => {
    const server = await serve();
    const holder = await client(server);
    const waiter = await client(server);
    const token = granted.exec(await holder.request(hold))![1]!;
    waiter.send(wait);
    // The waiter is queued once a later request on its connection is answered (one connection runs in order).
    expect(await waiter.request("P")).toBe("P");
    const order: string[] = [];
    const grant = waiter.next().then((line) => order.push(`grant ${line.split(" ")[0]}`));
    const release = holder.request(`R k ${token}`).then((line) => order.push(line));
    await Promise.all([grant, release]);
    // Replies reach this process in the order lockd wrote them: the grant, which the key's next
    // hand-off waits for, first.
    expect(order).toEqual([`grant ${wait[0]}`, "R k 1"]);
  });
});
