import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockdProcess, nodeInfo } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCommandLine, type RunCommand } from "./args.js";
import { eventually, finishInTurn, JOB, LockCli } from "./cli-process.test.support.js";
import { CliError } from "./errors.js";
import { EXIT_CODES } from "./exit-codes.js";

// `lock run --elect` against a real lockd, with lock a real process (apps/lock/dist).

/** A leader's command: prints `started NAME TERM PID` (LOCK_TERM), and on SIGTERM `stopped NAME`, exit 0. */
const LEADER_JOB = `
const name = process.argv[1];
if (process.env.LOCK_TERM !== process.env.LOCK_TOKEN) process.exit(98);
process.on("SIGTERM", () => { console.log("stopped " + name); process.exit(0); });
console.log("started " + name + " " + process.env.LOCK_TERM + " " + process.pid);
setInterval(() => {}, 1000);
`;

let lockd: LockdProcess;
let dir: string;
let keys = 0;
const key = () => `elect-run-${process.pid}-${++keys}`;
const env = () => ({ LOCK_SERVERS: lockd.address });
const waiters = async () => Number((await nodeInfo(lockd.port)).waiters);

/** Starts `lock run --elect KEY [flags] -- node -e LEADER_JOB NAME`. */
function runner(k: string, name: string, flags: readonly string[] = []): LockCli {
  return LockCli.start(["run", k, "--elect", ...flags, "--", "node", "-e", LEADER_JOB, name], env());
}

/** The term and pid of `cli`'s command once it prints `started NAME …` (the `nth` time). */
async function started(cli: LockCli, name: string, nth = 1): Promise<{ term: bigint; pid: number }> {
  // line() runs the match over the lines printed so far, in order, then over each new one.
  let seen = 0;
  const line = await cli.line((printed) => printed.startsWith(`started ${name} `) && ++seen === nth);
  const [, , term, pid] = line.split(" ");
  return { term: BigInt(term!), pid: Number(pid) };
}

beforeAll(async () => {
  lockd = await LockdProcess.start();
  dir = mkdtempSync(join(tmpdir(), "lock-elect-test-"));
});

afterAll(async () => {
  await lockd?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("lock run --elect: flags", () => {
  const parse = (argv: string[]) => parseCommandLine(argv, {}) as RunCommand;
  const usage = (argv: string[]) => {
    const error = (() => {
      try {
        parse(argv);
      } catch (caught) {
        return caught;
      }
      throw new Error(`parsed: ${argv.join(" ")}`);
    })();
    expect(error).toMatchObject({ code: "USAGE" });
    expect(error).toBeInstanceOf(CliError);
    return (error as Error).message;
  };

  it("parses --elect and --recampaign; a plain run has neither", () => {
    expect(parse(["run", "k", "--elect", "--", "true"]).elect).toEqual({ recampaign: false });
    expect(parse(["run", "--elect", "k", "--recampaign", "--wait", "5s", "--", "true"])).toMatchObject({
      key: "k",
      waitMs: 5_000,
      elect: { recampaign: true },
    });
    expect(parse(["run", "k", "--", "true"]).elect).toBeUndefined();
  });

  it("refuses --recampaign without --elect, and --elect with --shared, --permits or --no-wait", () => {
    expect(usage(["run", "k", "--recampaign", "--", "true"])).toMatch(/--recampaign is for lock run --elect/);
    expect(usage(["run", "k", "--elect", "--shared", "--", "true"])).toMatch(/--elect holds KEY alone/);
    expect(usage(["run", "k", "--elect", "--permits", "2", "--", "true"])).toMatch(/--elect holds KEY alone/);
    expect(usage(["run", "k", "--elect", "--no-wait", "--", "true"])).toMatch(/not with --no-wait/);
    expect(usage(["status", "--elect"])).toMatch(/--elect is not a flag of lock status/);
  });
});

describe("lock run --elect", () => {
  it("runs the command on one of two runners at a time; kill -9 of the leader hands it to the other, with a higher term", async () => {
    const k = key();
    using first = runner(k, "first", ["--lease", "1s"]);
    const leading = await started(first, "first");
    using second = runner(k, "second", ["--lease", "1s"]);
    // The second campaigns (waits in lockd's queue) and runs nothing while the first leads.
    await eventually(async () => (await waiters()) === 1);
    expect(second.stdout.filter((line) => line.startsWith("started"))).toEqual([]);
    // The first runner's machine dies: lock and its command, at once.
    first.kill("SIGKILL");
    process.kill(-leading.pid, "SIGKILL");
    // Its lease runs out on lockd (1s), and the second is elected.
    const next = await started(second, "second");
    expect(next.term).toBeGreaterThan(leading.term);
    expect(second.stderr.join("")).toMatch(/lock: elected leader of \S+ \(term \d+\); starting the command/);
    second.kill("SIGTERM");
    expect(await second.status()).toBe(0);
    expect(second.stdout).toContain("stopped second");
  });

  it("resigns when the command exits, so the standby takes over at once, not after the lease", async () => {
    const k = key();
    const log = join(dir, `${k}.log`);
    // A 60 s lease: only a resignation lets the second run within the test's time.
    using first = LockCli.start(
      ["run", k, "--elect", "--lease", "60s", "--", "node", "-e", JOB, log, "first"],
      env(),
    );
    await first.line((line) => line.startsWith("started first"));
    using second = LockCli.start(
      ["run", k, "--elect", "--lease", "60s", "--", "node", "-e", JOB, log, "second"],
      env(),
    );
    await eventually(async () => (await waiters()) === 1);
    await finishInTurn(first, second, log);
  });

  it("stops the command when leadership is lost and exits 82; with --recampaign, runs it again under a new term", async () => {
    const k = key();
    using once = runner(k, "once", ["--lease", "1s", "--kill-after", "300ms"]);
    const firstTerm = await started(once, "once");
    using again = runner(`${k}:again`, "again", ["--lease", "1s", "--kill-after", "300ms", "--recampaign"]);
    const before = await started(again, "again");
    // A stopped lockd renews nothing: both leases run out on the runners' clocks.
    lockd.pause();
    try {
      expect(await once.status()).toBe(EXIT_CODES.LOCK_LOST.status);
      await again.line((line) => line === "stopped again");
    } finally {
      lockd.resume();
    }
    expect(once.stdout).toContain("stopped once");
    expect(once.stderr.join("")).toMatch(/leadership of \S+ was lost/);
    expect(firstTerm.term).toBeGreaterThan(0n);
    const after = await started(again, "again", 2);
    expect(after.term).toBeGreaterThan(before.term);
    expect(again.stderr.join("")).toMatch(/lost; campaigning again/);
    // A signal for lock goes to the command, which exits 0: lock exits with it and does not campaign again.
    again.kill("SIGTERM");
    expect(await again.status()).toBe(0);
  });
});
