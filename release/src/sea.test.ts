import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { LineClient, REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InstalledLockd } from "./installed-lockd.js";
import { buildSea } from "./sea-build.js";

/**
 * lockd as one executable file (sea-build.ts), run with no Node on the PATH and nothing of the
 * repository around it: it prints its version, starts from a TOML config file, serves a lock,
 * serves the status page (its files are assets inside the executable) and stops gracefully.
 */
const run = promisify(execFile);
const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "apps", "lockd", "package.json"), "utf8"));
let folder: string;
let executable: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "lockd-sea-"));
  executable = await buildSea(join(folder, "build"));
});

afterAll(() => {
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
});

describe("lockd as a single executable file", () => {
  it("prints its version without a Node install on the PATH", async () => {
    const { stdout } = await run(executable, ["--version"], { cwd: folder, env: { PATH: "" } });
    expect(stdout).toBe(`${version}\n`);
  });

  it("starts from a config file, serves a lock and the status page, and stops with status 0", async () => {
    const config = join(folder, "lockd.toml");
    writeFileSync(
      config,
      `listen = "127.0.0.1:0"\nadmin = "127.0.0.1:0"\ndata-dir = "${join(folder, "data")}"\n`,
    );
    const lockd = await InstalledLockd.start(executable, ["--config", config], {
      cwd: folder,
      env: { PATH: "" },
    });
    try {
      using client = await LineClient.connect(lockd.ready.port);
      expect(await client.request("A sea:key 30 0")).toMatch(/^A sea:key \d+$/);
      const page = await fetch(`http://127.0.0.1:${lockd.ready.adminPort}/`);
      expect(page.status).toBe(200);
      // The page as shipped, with the node's state where the template marks it (the first paint).
      const template = readFileSync(join(REPO_ROOT, "apps", "lockd", "static", "index.html"), "utf8");
      const [head, tail] = template.split("<!--initial-state-->") as [string, string];
      const text = await page.text();
      expect(text.startsWith(head) && text.endsWith(tail)).toBe(true);
      expect(text).toContain('<script type="application/json" id="initial-state">{');
      const versions = await (await fetch(`http://127.0.0.1:${lockd.ready.adminPort}/version`)).json();
      expect(versions).toEqual({ version, node: process.versions.node });
    } finally {
      expect(await lockd.stop()).toEqual({ code: 0, signal: null });
    }
  });
});
