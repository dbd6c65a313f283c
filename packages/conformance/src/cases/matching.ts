import type { AcquireOutcome } from "../adapter-process.js";
import { type ConformanceCase, LEASE_MS, WAIT_MS } from "../case.js";
import {
  acquireAndRelease,
  check,
  expectExtended,
  expectFailure,
  expectGranted,
  expectGrantedAfter,
  expectReleased,
  nodeCounts,
} from "../checks.js";
import { WireTap } from "../wire-tools.js";

const PIPELINED = 200;
const WAITERS = 3;

/** Replies matched to the right call: ids, (verb, key) order, replies without a key, connection-level errors. */
export const matchingCases: readonly ConformanceCase[] = [
  {
    name: "pipelined-acquires",
    rule: "many calls in flight at once each get their own reply, and an acquire waiting in a queue holds up no other call",
    section: "#matching-replies",
    async run(ctx) {
      const lockd = await ctx.single();
      const [holder, client] = await Promise.all([ctx.client([lockd.address]), ctx.client([lockd.address])]);
      const blocked = ctx.key("blocked");
      const held = expectGranted(await holder.acquire(blocked, LEASE_MS, WAIT_MS), "the holder's acquire");
      // Waits until the holder releases, long after everything below is answered.
      const waiting = client.acquire(blocked, LEASE_MS, 0);
      await ctx.until(`the acquire of ${blocked} is queued`, async () => {
        return (await nodeCounts(lockd.port)).waiters === 1;
      });
      const keys = Array.from({ length: PIPELINED }, (_, i) => ctx.key(`k${i}`));
      const grants = await Promise.all(keys.map((key) => client.acquire(key, LEASE_MS, WAIT_MS)));
      const locks = grants.map((outcome, i) =>
        expectGranted(outcome, `pipelined acquire ${i} of ${PIPELINED}`),
      );
      check(
        new Set(locks.map((lock) => lock.token)).size === PIPELINED,
        "two pipelined grants share a token",
      );
      const releases = await Promise.all(locks.map((lock) => client.release(lock.lock)));
      for (const [i, outcome] of releases.entries()) expectReleased(outcome, true, `pipelined release ${i}`);
      expectReleased(await holder.release(held.lock), true, "the holder's release");
      const granted = expectGrantedAfter(await waiting, held, "the acquire that waited (wait 0: forever)");
      expectReleased(await client.release(granted.lock), true, "release of the waited-for lock");
    },
  },
  {
    name: "timeout-matched-by-id",
    rule: "an acquire whose short wait runs out while earlier acquires of the same key still wait on its connection gets the `T`, matched by its id; the earlier ones are granted later, in order",
    section: "#matching-replies",
    async run(ctx) {
      const lockd = await ctx.single();
      const tap = await WireTap.start(lockd.port);
      ctx.defer(() => tap.close());
      const holder = await ctx.client([lockd.address]);
      const client = await ctx.client([`127.0.0.1:${tap.port}`]);
      const key = ctx.key("k");
      let previous = expectGranted(await holder.acquire(key, LEASE_MS, WAIT_MS), "the holder's acquire");
      // Enough waiters that every connection of a round-robin client carries one.
      const waiting: Array<Promise<AcquireOutcome>> = [];
      for (let i = 1; i <= WAITERS; i++) {
        waiting.push(client.acquire(key, LEASE_MS, 0));
        await ctx.until(
          `${i} acquire(s) of ${key} queued`,
          async () => (await nodeCounts(lockd.port)).waiters === i,
        );
      }
      expectFailure(
        await client.acquire(key, LEASE_MS, 100),
        "timeout",
        "an acquire of the same key with a 100 ms wait",
      );
      // The case proves something only if the `T` came on a connection where an earlier acquire still waits.
      const timedOut = tap.lines.find((line) => !line.toServer && line.text.startsWith(`T ${key} `));
      check(timedOut !== undefined, "lockd sent no T");
      const sharesConnection = tap.lines.some(
        (line) =>
          line.toServer && line.connection === timedOut.connection && line.text.startsWith(`A ${key} 30 0 `),
      );
      check(
        sharesConnection,
        "the short acquire went out on a connection of its own: nothing to match it against",
      );
      expectReleased(await holder.release(previous.lock), true, "the holder's release");
      for (const [i, outcome] of waiting.entries()) {
        const lock = expectGrantedAfter(await outcome, previous, `waiter ${i + 1} of ${WAITERS}`);
        expectReleased(await client.release(lock.lock), true, `waiter ${i + 1}'s release`);
        previous = lock;
      }
    },
  },
  {
    name: "extends-in-flight",
    rule: "several extensions of one lock in flight at once are each answered: `X` replies carry no id and match the oldest outstanding `X` of the key",
    section: "#matching-replies",
    async run(ctx) {
      const lockd = await ctx.single();
      const client = await ctx.client([lockd.address]);
      const lock = expectGranted(await client.acquire(ctx.key("k"), LEASE_MS, WAIT_MS), "acquire");
      const extensions = await Promise.all(
        Array.from({ length: 4 }, () => client.extend(lock.lock, LEASE_MS)),
      );
      for (const [i, outcome] of extensions.entries()) {
        expectExtended(outcome, `extension ${i + 1} of 4 sent together`);
      }
      expectReleased(await client.release(lock.lock), true, "release after the extensions");
    },
  },
  {
    name: "error-without-key",
    rule: "an error line that names no key (`E A - KEY_TOO_LONG <id>`) answers the call with that id; the connection stays usable",
    section: "#matching-replies",
    async run(ctx) {
      // A server limit below the client's: the client sends the key, lockd refuses it.
      const lockd = await ctx.lockd(["--max-key-bytes", "16"]);
      const client = await ctx.client([lockd.address]);
      const long = `${"x".repeat(24)}.${ctx.key("k")}`.slice(0, 40);
      expectFailure(
        await client.acquire(long, LEASE_MS, WAIT_MS),
        "server_error",
        "an acquire of a key over the server's --max-key-bytes",
        "KEY_TOO_LONG",
      );
      await acquireAndRelease(client, "short", "after the refusal");
    },
  },
  {
    name: "server-closes-idle-connection",
    rule: "`E ? - IDLE_TIMEOUT` answers no request; the client reconnects and the next call succeeds",
    section: "#matching-replies",
    async run(ctx) {
      const lockd = await ctx.lockd(["--idle-timeout", "1"]);
      const client = await ctx.client([lockd.address]);
      await acquireAndRelease(client, ctx.key("a"), "before the idle close");
      // Only the probe's own connection left: lockd closed the client's idle ones.
      await ctx.until("lockd closed the client's idle connections", async () => {
        return (await nodeCounts(lockd.port)).connections === 1;
      });
      await acquireAndRelease(client, ctx.key("b"), "after the idle close");
    },
  },
];
