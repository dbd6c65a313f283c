import { parseArgs } from "node:util";
import { ConfigError } from "./address.js";
import { type ConfigFile, readConfigFile } from "./config-file.js";
import { FLAGS, type FlagName, type NumberFlag } from "./config-flags.js";
import { parseCount, parseSeconds } from "./numbers.js";
import type { Setting } from "./secrets.js";

/** The flags that take no value. */
type BooleanFlagName = "insecure" | "fast-io";

/** What the command line asks for: help, the version, or a run with these flag values. */
export type CommandLine =
  | { help: true }
  | { help: false; version: true }
  | { help: false; version: false; values: Record<string, string | boolean | undefined> };

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const options = Object.fromEntries(
    Object.keys(FLAGS).map((name) => [name, { type: "string" as const }]),
  ) as Record<FlagName, { type: "string" }>;
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        ...options,
        insecure: { type: "boolean" },
        "fast-io": { type: "boolean" },
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (values.help) return { help: true };
  if (values.version) return { help: false, version: true };
  return { help: false, version: false, values };
}

/**
 * Each flag's value from where it was set: a flag wins over its variable, a variable over the
 * config file, the file over the default. Every value carries its origin for error messages.
 */
export class ConfigSources {
  private readonly file: ConfigFile;

  constructor(
    private readonly values: Record<string, string | boolean | undefined>,
    readonly env: NodeJS.ProcessEnv,
    readonly readFile: (path: string) => Buffer,
  ) {
    const configPath = values.config as string | undefined;
    this.file = readConfigFile(
      configPath !== undefined
        ? { text: configPath, origin: "--config" }
        : env.LOCKD_CONFIG !== undefined
          ? { text: env.LOCKD_CONFIG, origin: "LOCKD_CONFIG (--config)" }
          : undefined,
      { values: Object.keys(FLAGS), booleans: ["insecure", "fast-io"], lists: ["peers", "semaphores"] },
      readFile,
    );
  }

  /** A boolean flag: given, or its variable ("1"/"true" turn it on, anything else off), or the file. */
  booleanFlag(name: BooleanFlagName, variable: string): { on: boolean; origin: string } {
    if (this.values[name] === true) return { on: true, origin: `--${name}` };
    const fromEnv = this.env[variable];
    if (fromEnv !== undefined)
      return { on: fromEnv === "1" || fromEnv === "true", origin: `${variable} (--${name})` };
    return this.file.flag(name) ?? { on: false, origin: `--${name}` };
  }

  setting(name: FlagName): Setting | undefined {
    const flag = FLAGS[name];
    const fromFlag = this.values[name] as string | undefined;
    if (fromFlag !== undefined) return { text: fromFlag, origin: `--${name}` };
    const fromEnv = this.env[flag.env];
    if (fromEnv !== undefined) return { text: fromEnv, origin: `${flag.env} (--${name})` };
    const fromFile = this.file.setting(name);
    if (fromFile !== undefined) return fromFile;
    return "default" in flag
      ? { text: flag.default, origin: `--${name} (default ${flag.default})` }
      : undefined;
  }

  get(name: FlagName): string | undefined {
    return this.setting(name)?.text;
  }

  numberOf(name: FlagName): number | undefined {
    const found = this.setting(name);
    if (found === undefined) return undefined;
    const flag = FLAGS[name] as NumberFlag;
    return "seconds" in flag ? parseSeconds(found, flag.seconds.minMs) : parseCount(found, flag.count.min);
  }
}
