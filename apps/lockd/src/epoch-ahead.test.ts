import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { composeEpoch, epochRound, tokenEpoch } from "@lock/protocol";
import { clockRound } from "@lock/server";
import { LineClient, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * An epoch file an hour ahead of the clock (a clock set back, a data directory from a machine whose
 * clock was ahead): lockd starts, says so loudly with the time it serves from and the time its
 * clock catches up, shows it in /status and /readyz, and serves after at most one lone-start wait.
 */
const AHEAD_ROUNDS = 3_600n;

const running: LockdProcess[] = [];
afterEach(async () => {
  for (const lockd of running.splice(0)) await lockd.dispose();
});

async function startAhead(args: string[]): Promise<{ lockd: LockdProcess; round: bigint }> {
  const round = clockRound(Date.now()) + AHEAD_ROUNDS;
  // Started once for its data directory, then restarted on the file written into it.
  const lockd = await LockdProcess.start({ admin: true, args });
  running.push(lockd);
  await lockd.kill("SIGKILL");
  writeFileSync(
    join(lockd.dataDir, "epoch"),
    `${JSON.stringify({ epoch: composeEpoch(round, 0).toString() })}\n`,
  );
  await lockd.restart();
  return { lockd, round };
}

async function get(
  lockd: LockdProcess,
  path: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`http://127.0.0.1:${lockd.adminPort}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("an epoch file ahead of the clock", () => {
  it("is logged loudly with when lockd serves and when its clock catches up, and shown in /status and /readyz", async () => {
    // A long skew bound makes the hold (2 × skew + 4 s) outlast the checks below.
    const { lockd, round } = await startAhead(["--max-clock-skew", "60"]);
    const warning = lockd.logs.find((entry) => String(entry.msg).startsWith("epoch ahead of clock"));
    expect(warning).toMatchObject({ level: 40, file: join(lockd.dataDir, "epoch") });
    expect(Number(warning!.aheadSeconds)).toBeGreaterThan(3_500);
    const servingFrom = Date.parse(String(warning!.servingFrom));
    const clockCatchesUpAt = Date.parse(String(warning!.clockCatchesUpAt));
    expect(servingFrom - Date.now()).toBeLessThanOrEqual(2 * 60_000 + 4_000);
    expect(clockCatchesUpAt - Date.now()).toBeGreaterThan(3_500_000);
    const status = await get(lockd, "/status");
    expect(status.body.epochAhead).toMatchObject({
      servingFrom: warning!.servingFrom,
      clockCatchesUpAt: warning!.clockCatchesUpAt,
    });
    // Above the stored epoch: node 0 again, so the next round.
    expect(epochRound(BigInt(String(status.body.epoch)))).toBe(round + 1n);
    const ready = await get(lockd, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.reason).toBe(
      `active but holding grants until ${warning!.servingFrom}: its new epoch is ahead of its clock`,
    );
  });

  it("is served after at most one lone-start wait, with tokens above the file's epoch", async () => {
    const { lockd, round } = await startAhead([]);
    using client = await LineClient.connect(lockd.port);
    let reply = await client.request("A after-the-hold 30 0");
    // NO_ACTIVE means "retry shortly" (docs/protocol.md): a real client retries within its wait.
    while (reply.includes(" NO_ACTIVE ")) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      reply = await client.request("A after-the-hold 30 0");
    }
    expect(reply).toMatch(/^A after-the-hold \d+$/);
    expect(tokenEpoch(BigInt(reply.split(" ")[2]!))).toBeGreaterThan(composeEpoch(round, 0));
  }, 30_000);
});
