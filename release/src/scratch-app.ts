import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export const run = promisify(execFile);

/** The Node flags some CI setups use: a deprecated API anywhere is fatal. */
const STRICT = "--pending-deprecation --throw-deprecation";

/**
 * Every `console.log` call prints exactly one line (no line breaks in long objects), so a run's
 * output lines line up with the example's `console.log` lines and the results their comments give.
 * Only the layout of the output changes, none of the example's code.
 */
const ONE_LINE_PER_LOG = `import { formatWithOptions as formatOneLine } from "node:util";
console.log = (...args) => void process.stdout.write(\`\${formatOneLine({ breakLength: Infinity }, ...args)}\\n\`);
`;

/**
 * A new user's app: a folder outside the workspace with a package.json of its own, where `npm
 * install` puts the packed tarballs and the drivers from the registry, and code runs as ES modules
 * that resolve imports to what npm installed.
 */
export class ScratchApp {
  readonly folder = mkdtempSync(join(tmpdir(), "lock-scratch-app-"));
  #runs = 0;

  /** Writes package.json and installs. */
  async install(
    dependencies: Record<string, string>,
    devDependencies: Record<string, string>,
  ): Promise<void> {
    writeFileSync(
      join(this.folder, "package.json"),
      JSON.stringify(
        { name: "scratch-app", private: true, type: "module", dependencies, devDependencies },
        null,
        2,
      ),
    );
    // Drivers come from the npm cache when it has them; only the npm registry is needed otherwise.
    await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
      cwd: this.folder,
    });
  }

  /** Runs `code` as an ES module in the app under the strict flags, with `env` only; its stdout. */
  async run(code: string, env: Record<string, string>): Promise<string> {
    const file = join(this.folder, `example-${++this.#runs}.mjs`);
    writeFileSync(file, ONE_LINE_PER_LOG + code);
    const { stdout } = await run(process.execPath, [file], {
      cwd: this.folder,
      env: { PATH: process.env.PATH ?? "", NODE_OPTIONS: STRICT, ...env },
    });
    return stdout;
  }

  dispose(): void {
    rmSync(this.folder, { recursive: true, force: true });
  }
}
