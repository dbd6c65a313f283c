import { parseToken } from "@lock/protocol";
import { FaultProxy } from "@lock/testkit";
import { type ConformanceCase, LEASE_MS } from "../case.js";
import { check, expectGranted, expectReleased, nodeCounts } from "../checks.js";
import { WireTap } from "../wire-tools.js";

// The acquire's wait. A retry with a fresh id would queue behind the orphaned grant (30 s lease) and
// time out after it.
const WAIT_MS = 8_000;

/** `A <key> <lease> <wait> <id>`: the wait in seconds and the id of a request line. */
function waitAndId(fields: readonly string[]): { wait: number; id: string | undefined } {
  return { wait: Number(fields[3]), id: fields[4] };
}

/** What a client does when a connection drops with an acquire's reply in flight. */
export const retryCases: readonly ConformanceCase[] = [
  {
    name: "retry-same-id",
    rule: "an acquire whose connection dropped after the server granted it is sent again with the same id and the remaining wait, and gets that grant (same token), not a second one",
    section: "#acquiring-ids-waits-and-retries",
    async run(ctx) {
      const lockd = await ctx.single();
      // client -> two FaultProxies (one per configured address) -> a tap that records the lines -> lockd
      const tap = await WireTap.start(lockd.port);
      ctx.defer(() => tap.close());
      const proxies = await Promise.all([FaultProxy.start(tap.port), FaultProxy.start(tap.port)]);
      ctx.defer(() => Promise.all(proxies.map((proxy) => proxy.close())));
      const client = await ctx.client(proxies.map((proxy) => proxy.address));
      await ctx.until("the client has a connection open to each configured address", () =>
        proxies.every((proxy) => proxy.connectionCount === 1),
      );
      const key = ctx.key("k");
      // Requests pass, replies are held: the grant happens on the server and never reaches the client.
      for (const proxy of proxies) proxy.freeze("toClient");
      const before = proxies.map((proxy) => proxy.bytes.toServer);
      const acquiring = client.acquire(key, LEASE_MS, WAIT_MS);
      await ctx.until(
        `lockd granted ${key} (its reply held in the proxy)`,
        () => tap.replies("A", key).length > 0,
      );
      const carrier = proxies.findIndex((proxy, i) => proxy.bytes.toServer > before[i]!);
      check(carrier >= 0, "no proxy carried the acquire");
      const other = proxies[1 - carrier]!;
      other.heal();
      // The connection that carried it drops with the grant unread: the outcome is unknown to the client.
      proxies[carrier]!.dropAll();
      proxies[carrier]!.heal();
      const lock = expectGranted(await acquiring, "the acquire whose first reply was lost");
      const firstGrant = parseToken(tap.replies("A", key)[0]?.[2] ?? "");
      check(firstGrant !== undefined, "no grant with a token went to the client");
      check(
        lock.token === firstGrant,
        `the retry was granted anew (token ${lock.token}) instead of getting the first grant (${firstGrant})`,
      );
      const attempts = tap.requests("A", key).map(waitAndId);
      check(attempts.length >= 2, `the acquire was sent ${attempts.length} time(s), expected a retry`);
      const [first, retry] = attempts as [ReturnType<typeof waitAndId>, ReturnType<typeof waitAndId>];
      check(first.id !== undefined, "the acquire carried no request id");
      check(retry.id === first.id, `the retry carried id ${retry.id}, the first attempt ${first.id}`);
      check(
        retry.wait > 0 && retry.wait < first.wait,
        `the retry asked for wait ${retry.wait} s after ${first.wait} s: it must ask for what is left (> 0)`,
      );
      check((await nodeCounts(lockd.port)).waiters === 0, "an acquire is still queued on the server");
      expectReleased(await client.release(lock.lock), true, "release of the recovered grant");
    },
  },
];
