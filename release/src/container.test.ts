import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { InstalledLockd } from "./installed-lockd.js";

/**
 * deploy/container/Dockerfile without a Docker engine (none runs where the release checks run):
 * linted with dockerfile-utils, then its build step and entry point run outside Docker, the
 * image's paths mapped into a scratch folder: the install from the packed tarballs (the context
 * pack.sh makes) must give a lockd that the ENTRYPOINT and ENV start.
 */
const run = promisify(execFile);
const packed = inject("packed");
const DOCKERFILE = join(REPO_ROOT, "deploy", "container", "Dockerfile");

/** The Dockerfile's instructions: continuation lines joined, comments and the syntax line dropped. */
const instructions = readFileSync(DOCKERFILE, "utf8")
  .replace(/\\\n/g, " ")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.startsWith("#"))
  .map((line) => {
    const [keyword, ...rest] = line.trim().split(/\s+/);
    return { keyword: keyword!, args: rest.join(" ") };
  });
const only = (keyword: string) => {
  const found = instructions.filter((instruction) => instruction.keyword === keyword);
  expect(found, keyword).toHaveLength(1);
  return found[0]!.args;
};

let root: string;
/** The image's paths in the scratch folder. */
let paths: Record<string, string>;
const mapped = (text: string) =>
  Object.entries(paths).reduce((out, [from, to]) => out.replaceAll(from, to), text);

/** lockd and the workspace packages it needs at run time, as pack.sh selects them. */
function runtimeClosure(): string[] {
  const manifestOf = (name: string) =>
    JSON.parse(
      readFileSync(
        join(REPO_ROOT, packed.find((entry) => entry.name === name)!.directory, "package.json"),
        "utf8",
      ),
    );
  const names = new Set<string>();
  const visit = (name: string) => {
    if (names.has(name)) return;
    names.add(name);
    for (const dependency of Object.keys(manifestOf(name).dependencies ?? {})) {
      if (packed.some((entry) => entry.name === dependency)) visit(dependency);
    }
  };
  visit("lockd");
  return [...names];
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "lock-image-"));
  paths = {
    "/tmp/tarballs/": `${join(root, "context")}/`,
    "/opt/lockd": join(root, "opt", "lockd"),
    "/var/lib/lockd": join(root, "var", "lib", "lockd"),
    "/nodejs/bin/node": process.execPath,
  };
  mkdirSync(join(root, "context"));
  for (const name of runtimeClosure()) {
    const { tarball } = packed.find((entry) => entry.name === name)!;
    copyFileSync(tarball, join(root, "context", basename(tarball)));
  }
  const workdir = mapped(only("WORKDIR"));
  mkdirSync(workdir, { recursive: true });
  await run("sh", ["-c", mapped(only("RUN"))], { cwd: workdir });
});

afterAll(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

/** ENV's `NAME=value` pairs, the image's paths mapped. */
function imageEnvironment(): Record<string, string> {
  return Object.fromEntries(
    only("ENV")
      .split(/\s+/)
      .map((pair) => pair.split("=") as [string, string])
      .map(([name, value]) => [name, mapped(value)]),
  );
}

describe("the container image definition", () => {
  it("is clean for dockerfile-utils lint", async () => {
    const { stdout, stderr } = await run(
      join(REPO_ROOT, "release", "node_modules", ".bin", "dockerfile-utils"),
      ["lint", DOCKERFILE],
    );
    expect(stdout + stderr).toBe("");
  });

  it("runs as a user without privileges, builds on the Node major of engines, and stops with SIGTERM", () => {
    expect(only("USER")).toBe("65532:65532");
    expect(only("STOPSIGNAL")).toBe("SIGTERM");
    const engines = JSON.parse(readFileSync(join(REPO_ROOT, "apps", "lockd", "package.json"), "utf8")).engines
      .node;
    expect(only("ARG")).toBe(`NODE_MAJOR=${/^>=(\d+)\./.exec(engines)![1]}`);
    expect(instructions.filter((instruction) => instruction.keyword === "FROM")).toHaveLength(2);
  });

  it("refuses to serve its non-loopback defaults without tokens (exit status 2, before binding)", async () => {
    const [command, ...args] = JSON.parse(mapped(only("ENTRYPOINT"))) as string[];
    const child = spawn(command!, args, { env: { PATH: process.env.PATH ?? "", ...imageEnvironment() } });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(stderr).toMatch(/^lockd: refusing to serve 0\.0\.0\.0 without an auth token/);
  });

  it("serves from the installed tarballs with its ENTRYPOINT, ENV and data directory, and is ready", async () => {
    const [command, ...args] = JSON.parse(mapped(only("ENTRYPOINT"))) as string[];
    const lockd = await InstalledLockd.start(command!, args, {
      env: {
        ...imageEnvironment(),
        // A free loopback port here instead of 0.0.0.0:7420; the tokens a deployment mounts.
        LOCKD_LISTEN: "127.0.0.1:0",
        LOCKD_ADMIN: "127.0.0.1:0",
        LOCKD_AUTH_TOKEN: "auth-token-of-the-image-test",
        LOCKD_ADMIN_TOKEN: "admin-token-of-the-image-test",
      },
    });
    try {
      expect(lockd.logs.find((line) => line.msg === "lockd ready")).toMatchObject({
        dataDir: paths["/var/lib/lockd"],
      });
      const ready = await fetch(`http://127.0.0.1:${lockd.ready.adminPort}/readyz`);
      expect(ready.status).toBe(200);
    } finally {
      expect(await lockd.stop()).toEqual({ code: 0, signal: null });
    }
  });
});
