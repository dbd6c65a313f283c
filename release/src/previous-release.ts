import { type ExecFileSyncOptions, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";

const LOCKD_MANIFEST = "apps/lockd/package.json";

/** A released lockd: its version and the commit that released it (the changesets' version commit). */
export interface Release {
  readonly version: string;
  readonly commit: string;
}

function git(...args: string[]): string {
  return execFileSync("git", ["-C", REPO_ROOT, ...args], { encoding: "utf8" }).trim();
}

function lockdVersionAt(commit: string): string | undefined {
  try {
    return JSON.parse(git("show", `${commit}:${LOCKD_MANIFEST}`)).version;
  } catch {
    return undefined; // no lockd manifest there (or not a commit): no version
  }
}

/**
 * The release before this tree: the newest commit other than HEAD that changed lockd's version (the
 * commit `pnpm changeset version` made, README "Releasing"). On a release commit that is the release
 * before it; on work after a release, that release. Needs the history (not a shallow clone).
 */
export function previousRelease(): Release {
  const head = git("rev-parse", "HEAD");
  for (const commit of git("log", "--format=%H", "--", LOCKD_MANIFEST).split("\n")) {
    if (commit === head) continue;
    const version = lockdVersionAt(commit);
    if (version !== undefined && version !== "0.0.0" && version !== lockdVersionAt(`${commit}^`)) {
      return { version, commit };
    }
  }
  throw new Error(
    `no earlier lockd release in this checkout's history (${LOCKD_MANIFEST}); a shallow clone? fetch the history`,
  );
}

/**
 * Builds `release`'s lockd from its commit in a folder outside the repository (git archive, pnpm
 * install, tsc -b), cached by commit under the temporary directory: CI builds it once, later runs
 * reuse it. The folder appears whole or not at all (built aside, then renamed). Returns the built
 * entry point, to run as `node <main>`.
 */
export function buildRelease(release: Release): string {
  const root = join(tmpdir(), "lockd-releases");
  const dir = join(root, release.commit);
  const main = join(dir, "apps", "lockd", "dist", "main.js");
  if (existsSync(main)) return main;
  mkdirSync(root, { recursive: true });
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building);
  try {
    execFileSync(
      "sh",
      ["-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, REPO_ROOT, release.commit, building],
      {
        stdio: "inherit",
      },
    );
    const quiet: ExecFileSyncOptions = { cwd: building, stdio: ["ignore", "ignore", "inherit"] };
    // The store already holds what this repository installs: an old lockfile mostly resolves offline.
    execFileSync("pnpm", ["install", "--frozen-lockfile", "--prefer-offline"], quiet);
    execFileSync(join(building, "node_modules", ".bin", "tsc"), ["-b", "apps/lockd"], quiet);
    renameSync(building, dir);
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    // Another run that finished first is as good.
    if (existsSync(main)) return main;
    throw error;
  }
  return main;
}
