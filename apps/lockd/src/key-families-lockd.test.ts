import { execFile, spawnSync } from "node:child_process";
import { acquireMany, LineClient, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The key-family metrics of a real lockd over real sockets: however many keys clients send, /metrics
 * has one label set per family, never more than `--key-family-limit` of them plus `other`.
 */
const running: LockdProcess[] = [];
const clients: LineClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const lockd of running.splice(0)) await lockd.dispose();
});

async function start(args: string[]): Promise<{ lockd: LockdProcess; client: LineClient }> {
  const lockd = await LockdProcess.start({ admin: true, args });
  running.push(lockd);
  const client = await LineClient.connect(lockd.port);
  clients.push(client);
  return { lockd, client };
}

async function metricsOf(lockd: LockdProcess): Promise<string> {
  return (await fetch(`http://127.0.0.1:${lockd.adminPort}/metrics`)).text();
}

/** The label sets of one metric's samples (`name{labels} value`), each as its `{…}` text. */
function labelSets(text: string, name: string): Map<string, number> {
  const sets = new Map<string, number>();
  for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\}) (\\S+)$`, "gm")))
    sets.set(match[1]!, Number(match[2]));
  return sets;
}

/** `n` as lowercase letters only (the built-in family cuts a key at its first digit). */
function letters(n: number): string {
  let text = "";
  do {
    text = String.fromCharCode(97 + (n % 26)) + text;
    n = Math.floor(n / 26);
  } while (n > 0);
  return text;
}

const promtool = spawnSync("promtool", ["--version"]).status === 0;

describe("lockd's key-family metrics", () => {
  it("labels 10,000 distinct keys in 3 families with exactly 3 label sets", async () => {
    const { lockd, client } = await start(["--key-families", "tenant=^tenant:[^:]+:"]);
    await acquireMany(client, { prefix: "orders:", count: 4_000, leaseSeconds: 600, idPrefix: "o" });
    await acquireMany(client, { prefix: "tenant:acme:", count: 3_000, leaseSeconds: 600, idPrefix: "t" });
    await acquireMany(client, { prefix: "job-", count: 3_000, leaseSeconds: 600, idPrefix: "j" });
    const text = await metricsOf(lockd);
    expect(labelSets(text, "lockd_key_family_held")).toEqual(
      new Map([
        ['{family="orders:*",kind="exclusive"}', 4_000],
        ['{family="tenant",kind="exclusive"}', 3_000],
        ['{family="job-*",kind="exclusive"}', 3_000],
      ]),
    );
    expect(labelSets(text, "lockd_key_family_waiting").size).toBe(3);
    const waits = labelSets(text, "lockd_key_family_wait_seconds_count");
    expect([...waits.values()]).toEqual([4_000, 3_000, 3_000]);
    // Every acquire was granted on arrival: a wait of 0, in the first bucket.
    expect(
      labelSets(text, "lockd_key_family_wait_seconds_bucket").get(
        '{family="job-*",kind="exclusive",le="0.0001"}',
      ),
    ).toBe(3_000);
  });

  it("keeps at most --key-family-limit families and counts the keys of every other one as 'other'", async () => {
    const { lockd, client } = await start(["--key-family-limit", "10"]);
    let lines = "";
    for (let n = 0; n < 1_000; n++) lines += `A ${letters(n)}:1 600 0\n`;
    client.send(lines);
    for (let n = 0; n < 1_000; n++) expect(await client.next()).toMatch(/^A /);
    const held = labelSets(await metricsOf(lockd), "lockd_key_family_held");
    expect(held.size).toBe(11);
    expect(held.get('{family="other",kind="exclusive"}')).toBe(990);
    expect(held.get('{family="a:*",kind="exclusive"}')).toBe(1);
  });

  it("shows each contended key's family and the busiest families in /status", async () => {
    const { lockd, client } = await start([]);
    const holder = await client.request("A orders:7 600 0");
    expect(holder).toMatch(/^A orders:7 /);
    const waiter = await LineClient.connect(lockd.port);
    clients.push(waiter);
    waiter.send("A orders:7 600 0\n");
    await expect.poll(async () => (await statusOf(lockd)).waiters).toBe(1);
    const status = await statusOf(lockd);
    expect(status.mostContended).toEqual([{ key: "orders:7", waiters: 1, family: "orders:*" }]);
    expect(status.families?.[0]).toMatchObject({ family: "orders:*", waiting: 1, held: 1, grants: 1 });
  });

  it("sends nothing by family with --key-family-limit 0", async () => {
    const { lockd, client } = await start(["--key-family-limit", "0"]);
    expect(await client.request("A orders:7 600 0")).toMatch(/^A /);
    expect(await metricsOf(lockd)).not.toContain("lockd_key_family_");
    expect((await statusOf(lockd)).families).toBeNull();
  });

  // .ci/deploy-tools.sh installs promtool, so CI always runs this; a machine without it skips it.
  it.skipIf(!promtool && process.env.CI === undefined)(
    "serves /metrics that promtool check metrics accepts",
    async () => {
      const { lockd, client } = await start([]);
      await acquireMany(client, { prefix: "orders:", count: 10, leaseSeconds: 600 });
      const text = await metricsOf(lockd);
      const problems = await new Promise<string>((resolve, reject) => {
        const child = execFile("promtool", ["check", "metrics"], (error, stdout, stderr) => {
          // promtool exits 3 for lint problems only (naming advice), 1 for a format it cannot parse.
          if (error && error.code !== 3) reject(new Error(`promtool: ${stderr}${stdout}`));
          else resolve(`${stdout}${stderr}`);
        });
        child.stdin!.end(text);
      });
      expect(problems.split("\n").filter((line) => line.includes("lockd_key_family_"))).toEqual([]);
    },
  );
});

async function statusOf(lockd: LockdProcess) {
  return (await (await fetch(`http://127.0.0.1:${lockd.adminPort}/status`)).json()) as {
    waiters: number;
    mostContended: unknown[];
    families: Array<Record<string, unknown>> | null;
  };
}
