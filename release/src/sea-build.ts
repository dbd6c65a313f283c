import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { REPO_ROOT } from "@lock/testkit";
import { build, type Plugin } from "esbuild";

/**
 * Builds lockd as a single executable file (Node's single executable applications): the built
 * lockd bundled with its dependencies into one CommonJS script (esbuild), turned into a blob by
 * `node --experimental-sea-config`, and injected into a copy of the Node binary that runs this
 * (postject). `pnpm build:sea [DIR]` (default `dist-sea/`) writes DIR/lockd.
 *
 * lockd reads two kinds of files next to its code: its package.json (the version) and the status
 * page (static/). In the executable they are SEA assets: lockd's modules see `import.meta.url` as a
 * path under VIRTUAL_ROOT, and their `node:fs` is a shim that serves that root from the assets.
 * lockd's own code is unchanged.
 */
const LOCKD = join(REPO_ROOT, "apps", "lockd");
const VIRTUAL_ROOT = "file:///lockd-sea/";
/** The fuse postject flips so that Node looks for the blob (Node's documentation names it). */
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/** `node:fs` for lockd's own modules: the assets under VIRTUAL_ROOT, the real file system elsewhere. */
const FS_SHIM = `
const fs = require("node:fs");
const { getAsset } = require("node:sea");
module.exports = {
  ...fs,
  readFileSync(path, options) {
    const href = path instanceof URL ? path.href : String(path);
    if (!href.startsWith(${JSON.stringify(VIRTUAL_ROOT)})) return fs.readFileSync(path, options);
    const bytes = Buffer.from(getAsset(href.slice(${VIRTUAL_ROOT.length})));
    const encoding = typeof options === "string" ? options : options?.encoding;
    return encoding ? bytes.toString(encoding) : bytes;
  },
};
`;

function assetsPlugin(): Plugin {
  const lockdDist = `${join(LOCKD, "dist")}/`;
  return {
    name: "lockd-sea-assets",
    setup(plugin) {
      plugin.onResolve({ filter: /^node:fs$/ }, (args) =>
        args.importer.startsWith(lockdDist) ? { path: "fs-shim", namespace: "lockd-sea" } : undefined,
      );
      plugin.onLoad({ filter: /^fs-shim$/, namespace: "lockd-sea" }, () => ({
        contents: FS_SHIM,
        loader: "js",
      }));
    },
  };
}

/** Builds the executable into `outDir`; its path. */
export async function buildSea(outDir: string): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  const script = join(outDir, "lockd.cjs");
  await build({
    entryPoints: [join(LOCKD, "dist", "main.js")],
    outfile: script,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: `node${process.versions.node.split(".")[0]}`,
    // Every lockd module lives in dist/: `new URL("../static/", import.meta.url)` lands in the assets.
    define: { "import.meta.url": JSON.stringify(`${VIRTUAL_ROOT}dist/main.js`) },
    plugins: [assetsPlugin()],
    logLevel: "warning",
  });
  const assets = Object.fromEntries([
    ["package.json", join(LOCKD, "package.json")],
    ...readdirSync(join(LOCKD, "static")).map((file) => [`static/${file}`, join(LOCKD, "static", file)]),
  ]);
  const config = join(outDir, "sea-config.json");
  const blob = join(outDir, "lockd.blob");
  writeFileSync(
    config,
    JSON.stringify({
      main: script,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: false,
      assets,
    }),
  );
  execFileSync(process.execPath, ["--experimental-sea-config", config], { stdio: "pipe" });
  const executable = join(outDir, "lockd");
  copyFileSync(process.execPath, executable);
  const postject = join(REPO_ROOT, "release", "node_modules", ".bin", "postject");
  execFileSync(postject, [executable, "NODE_SEA_BLOB", blob, "--sentinel-fuse", SEA_FUSE], { stdio: "pipe" });
  return executable;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const executable = await buildSea(resolve(process.argv[2] ?? join(REPO_ROOT, "dist-sea")));
  process.stdout.write(`${executable}\n`);
}
