import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@lock/testkit";
import { afterAll, describe, expect, inject, it } from "vitest";

const run = promisify(execFile);
const bin = (name: string) => join(REPO_ROOT, "node_modules", ".bin", name);
const packed = inject("packed");
const tarballOf = (name: string) => packed.find((entry) => entry.name === name)!.tarball;
const unpacked: string[] = [];
afterAll(() => {
  for (const folder of unpacked) rmSync(folder, { recursive: true, force: true });
});

const hasExports = (directory: string): boolean =>
  JSON.parse(readFileSync(join(REPO_ROOT, directory, "package.json"), "utf8")).exports !== undefined;

/** Extracts `tarball` (npm's layout: everything under package/) and lists its files. */
async function unpack(tarball: string): Promise<{ root: string; files: string[] }> {
  const folder = mkdtempSync(join(tmpdir(), "lock-unpacked-"));
  unpacked.push(folder);
  await run("tar", ["xzf", tarball, "-C", folder]);
  const root = join(folder, "package");
  const files = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
  return { root, files };
}

it("packs every published package (and only those)", () => {
  expect(packed.map((entry) => entry.name).sort()).toEqual([
    "@lock/cli",
    "@lock/client",
    "@lock/coordinator",
    "@lock/deadline-heap",
    "@lock/fence",
    "@lock/protocol",
    "@lock/server",
    "@lock/socket-io",
    "lockd",
  ]);
});

describe.each(packed)("$name tarball", ({ directory, tarball }) => {
  it("has a manifest fit for the registry: no workspace-only condition or protocol, license, links", async () => {
    const { root } = await unpack(tarball);
    const text = readFileSync(join(root, "package.json"), "utf8");
    expect(text).not.toContain("@lock/source");
    expect(text).not.toContain("workspace:");
    const manifest = JSON.parse(text);
    expect(manifest).toMatchObject({
      license: "MIT",
      repository: { type: "git", url: "git+https://github.com/lock-dev/lock.git", directory },
      homepage: `https://github.com/lock-dev/lock/tree/main/${directory}#readme`,
      bugs: { url: "https://github.com/lock-dev/lock/issues" },
      publishConfig: { access: "public" },
    });
    // publishConfig.exports repeats exports without the condition: a subpath added to one only fails here.
    const workspace = JSON.parse(readFileSync(join(REPO_ROOT, directory, "package.json"), "utf8"));
    const withoutSource = (conditions: Record<string, string>) =>
      Object.fromEntries(Object.entries(conditions).filter(([condition]) => condition !== "@lock/source"));
    // lockd is a command only: no exports in either.
    expect(manifest.exports).toEqual(
      workspace.exports &&
        Object.fromEntries(
          Object.entries(workspace.exports as Record<string, Record<string, string>>).map(
            ([path, conditions]) => [path, withoutSource(conditions)],
          ),
        ),
    );
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    expect(existsSync(join(root, "README.md"))).toBe(true);
  });

  it("ships no tests, no build info, and no source map that points at a missing file", async () => {
    const { root, files } = await unpack(tarball);
    expect(files.filter((file) => /\.test\.|\.tsbuildinfo$/.test(file))).toEqual([]);
    const maps = files.filter((file) => file.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(0);
    const dangling = maps.flatMap((map) => {
      const { sources, sourceRoot = "" } = JSON.parse(readFileSync(join(root, map), "utf8"));
      return (sources as string[])
        .map((source) => resolve(dirname(join(root, map)), sourceRoot, source))
        .filter((source) => !source.startsWith(`${root}/`) || !existsSync(source))
        .map((source) => `${map} -> ${relative(root, source)}`);
    });
    expect(dangling).toEqual([]);
  });

  it("declares no @internal member (stripInternal)", async () => {
    const { root, files } = await unpack(tarball);
    const declarations = files.filter((file) => file.endsWith(".d.ts"));
    expect(
      declarations.filter((file) => readFileSync(join(root, file), "utf8").includes("@internal")),
    ).toEqual([]);
  });

  it("is clean for publint (strict)", async () => {
    const { stdout } = await run(bin("publint"), ["run", tarball, "--strict"]);
    expect(stdout).toContain("All good!");
  });

  // lockd has no types to check: it is a command, not a library.
  if (hasExports(directory)) {
    it("is clean for @arethetypeswrong/cli (ESM-only profile, offline)", async () => {
      // ESM-only by design (Node >= 22.12): the node10 and CommonJS resolutions do not apply.
      await run(bin("attw"), [
        "--no-definitely-typed",
        "--profile",
        "esm-only",
        "--format",
        "ascii",
        tarball,
      ]);
    });
  }
});

it("ships lockd runnable: its bin, the status page's files, every runtime import declared", async () => {
  const { root, files } = await unpack(tarballOf("lockd"));
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  expect(manifest.private).toBeUndefined();
  expect(manifest.bin).toEqual({ lockd: "./dist/main.js" });
  expect(readFileSync(join(root, "dist", "main.js"), "utf8")).toMatch(/^#!\/usr\/bin\/env node\n/);
  expect(files).toEqual(
    expect.arrayContaining(["static/index.html", "static/status.js", "static/status.css"]),
  );
  // Development tools (the page's browser tests, pnpm screenshot) stay out: they need playwright-core.
  expect(files.filter((file) => /browser|screenshot/.test(file))).toEqual([]);
  const imported = new Set(
    files
      .filter((file) => file.endsWith(".js"))
      .flatMap((file) => [...readFileSync(join(root, file), "utf8").matchAll(/from "([^".][^"]*)"/g)])
      .map(([, specifier]) =>
        specifier!
          .split("/")
          .slice(0, specifier!.startsWith("@") ? 2 : 1)
          .join("/"),
      )
      .filter((name) => !name.startsWith("node:")),
  );
  expect([...imported].sort()).toEqual(Object.keys(manifest.dependencies).sort());
});

it("keeps the client's internals out of its types", async () => {
  const { root } = await unpack(tarballOf("@lock/client"));
  const lock = readFileSync(join(root, "dist", "lock.d.ts"), "utf8");
  // The constructor is private (no parameters shown), the factory the client uses is stripped.
  expect(lock).toContain("private constructor();");
  expect(lock).not.toContain("LockBackend,");
  for (const hidden of ["create(", "startAutoExtend", "refresh(", "requestId", "PREV", "NEXT", "OWNER"]) {
    expect(lock, hidden).not.toContain(hidden);
  }
});

it("keeps test clocks and other packages' helpers out of @lock/server's exports", async () => {
  const { root } = await unpack(tarballOf("@lock/server"));
  const index = readFileSync(join(root, "dist", "index.d.ts"), "utf8");
  expect(index).not.toMatch(/\b(DeadlineHeap|DeadlineEntry|ManualClock|formatAddress)\b/);
});

it("leaves the cluster simulator (a development tool) out of @lock/server", async () => {
  const { files } = await unpack(tarballOf("@lock/server"));
  expect(files.some((file) => file.includes("cluster/sim/"))).toBe(false);
  expect(files.some((file) => file.endsWith("cluster/cluster.js"))).toBe(true);
});

it("declares @types/pg an optional peer of @lock/fence, like pg: the postgres declarations use its types", async () => {
  const { root } = await unpack(tarballOf("@lock/fence"));
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  expect(manifest.peerDependencies["@types/pg"]).toBe(manifest.peerDependencies.pg);
  expect(manifest.peerDependenciesMeta["@types/pg"]).toEqual({ optional: true });
  expect(readFileSync(join(root, "dist", "postgres", "store.d.ts"), "utf8")).toMatch(/from "pg"/);
});
