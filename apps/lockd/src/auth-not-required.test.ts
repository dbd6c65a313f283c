import { LineClient, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

const running: LockdProcess[] = [];
afterEach(async () => {
  for (const lockd of running.splice(0)) await lockd.dispose();
});

describe("a client token sent to lockd without auth", () => {
  it("is accepted, warned about once in the log, and counted every time", async () => {
    const lockd = await LockdProcess.start({ admin: true });
    running.push(lockd);
    for (let i = 0; i < 3; i++) {
      using client = await LineClient.connect(lockd.port);
      // A client may be given its token before the server requires one (a rollout): not refused.
      expect(await client.request("H a-token-nobody-checks")).toBe("H");
      expect(await client.request(`A key${i} 30 0`)).toMatch(/^A key\d \d+$/);
    }
    const warning = await lockd.waitForLog((entry) => String(entry.msg).includes("this server has none"), {
      since: 0,
    });
    expect(warning).toMatchObject({ level: 40 });
    expect(lockd.logs.filter((entry) => String(entry.msg).includes("this server has none"))).toHaveLength(1);
    const metrics = await (await fetch(`http://127.0.0.1:${lockd.adminPort}/metrics`)).text();
    expect(metrics).toMatch(/^lockd_auth_not_required_total 3$/m);
  });
});
