import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";

export interface PackedPackage {
  readonly name: string;
  /** The package's folder in the repository, e.g. `packages/client`. */
  readonly directory: string;
  readonly tarball: string;
}

/** The workspace packages that are published: every `packages/*` and `apps/*` not marked private. */
export function publishedPackages(): Array<{ name: string; directory: string }> {
  return ["packages", "apps"]
    .flatMap((parent) => readdirSync(join(REPO_ROOT, parent)).map((folder) => `${parent}/${folder}`))
    .map((directory) => {
      const manifest = JSON.parse(readFileSync(join(REPO_ROOT, directory, "package.json"), "utf8"));
      return { name: manifest.name as string, directory, private: manifest.private === true };
    })
    .filter((entry) => !entry.private)
    .map(({ name, directory }) => ({ name, directory }));
}

/**
 * Packs every published package into `destination` with `pnpm pack`: what `pnpm publish` uploads.
 * pnpm applies `publishConfig` (the exports without the workspace-only `@lock/source` condition) and
 * replaces `workspace:*` with the version of the package it points at.
 */
export function packAll(destination: string): PackedPackage[] {
  return publishedPackages().map(({ name, directory }) => {
    const output = execFileSync("pnpm", ["pack", "--pack-destination", destination], {
      cwd: join(REPO_ROOT, directory),
      encoding: "utf8",
    });
    const tarball = output
      .trim()
      .split("\n")
      .map((line) => line.trim())
      .findLast((line) => line.endsWith(".tgz"));
    if (tarball === undefined) throw new Error(`pnpm pack printed no tarball for ${name}:\n${output}`);
    return { name, directory, tarball: join(destination, basename(tarball)) };
  });
}
