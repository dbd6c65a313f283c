import { extname } from "node:path";
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "./address.js";
import type { Setting } from "./secrets.js";

/**
 * A lockd config file (`--config lockd.toml|yaml|yml|json`): one key per flag, named as the flag
 * (`peer-timeout = 0.3`, `peers = ["a:7420", "b:7420"]`, `insecure = true`). It only supplies a
 * flag's text: config.ts parses and range-checks it exactly as it would the flag, with an origin
 * that names the file and the key. Secrets themselves are not keys (no flag holds one): the file
 * names the files that hold them (`auth-token-file`…), so it can be world-readable.
 */
export interface ConfigFile {
  /** The text the flag `name` would have had, if the file sets it. */
  setting(name: string): Setting | undefined;
  /** A boolean flag (`insecure`, `fast-io`), if the file sets it. */
  flag(name: string): { readonly on: boolean; readonly origin: string } | undefined;
}

/** Keys a file may hold: the value flags, and the boolean ones. */
export interface ConfigKeys {
  readonly values: readonly string[];
  readonly booleans: readonly string[];
  /** Value flags that are lists (`peers`): the file may give an array of strings. */
  readonly lists: readonly string[];
}

const NO_FILE: ConfigFile = { setting: () => undefined, flag: () => undefined };

const PARSERS: Record<string, (text: string) => unknown> = {
  ".toml": parseToml,
  ".yaml": (text) => parseYaml(text, { uniqueKeys: true, strict: true }),
  ".yml": (text) => parseYaml(text, { uniqueKeys: true, strict: true }),
  ".json": JSON.parse,
};

/** Reads the file named by `path` (`--config` or `LOCKD_CONFIG`); no path, no file. */
export function readConfigFile(
  path: Setting | undefined,
  keys: ConfigKeys,
  readFile: (path: string) => Buffer,
): ConfigFile {
  if (path === undefined || path.text === "") return NO_FILE;
  const parse = PARSERS[extname(path.text).toLowerCase()];
  if (parse === undefined) {
    throw new ConfigError(
      `${path.origin}: ${path.text}: expected a .toml, .yaml, .yml or .json file, got "${extname(path.text)}"`,
    );
  }
  let text: string;
  try {
    text = readFile(path.text).toString("utf8");
  } catch (error) {
    throw new ConfigError(
      `${path.origin}: cannot read ${path.text}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ConfigError(`${path.text}: ${(error as Error).message}`);
  }
  // An empty YAML file is null: no keys, every flag from elsewhere.
  if (document === null || document === undefined) return NO_FILE;
  if (typeof document !== "object" || Array.isArray(document)) {
    throw new ConfigError(`${path.text}: expected a table of lockd's flag names and values`);
  }
  return fromEntries(path.text, document as Record<string, unknown>, keys);
}

function fromEntries(file: string, document: Record<string, unknown>, keys: ConfigKeys): ConfigFile {
  const settings = new Map<string, Setting>();
  const flags = new Map<string, { on: boolean; origin: string }>();
  for (const [key, value] of Object.entries(document)) {
    const origin = `${file}: ${key} (--${key})`;
    if (keys.booleans.includes(key)) {
      if (typeof value !== "boolean")
        throw new ConfigError(`${origin}: expected true or false, got ${show(value)}`);
      flags.set(key, { on: value, origin });
    } else if (keys.values.includes(key)) {
      settings.set(key, { text: flagText(value, keys.lists.includes(key), origin), origin });
    } else {
      // A misspelt key would otherwise leave its flag at the default without a word.
      throw new ConfigError(
        `${file}: unknown key ${JSON.stringify(key)}; the keys are lockd's flag names: ${[...keys.values, ...keys.booleans].join(", ")}`,
      );
    }
  }
  return { setting: (name) => settings.get(name), flag: (name) => flags.get(name) };
}

/**
 * A value as the flag's text: strings as they are, numbers in JavaScript's shortest form (`0.3`,
 * `30`; a form the flag refuses, such as `1e+21`, is refused as the flag would), a list as
 * comma-separated text. Anything else (a table, a boolean for a value flag) is an error here.
 */
function flagText(value: unknown, list: boolean, origin: string): string {
  if (typeof value === "string") return value;
  if ((typeof value === "number" && Number.isFinite(value)) || typeof value === "bigint")
    return String(value);
  if (list && Array.isArray(value) && value.every((item) => typeof item === "string")) return value.join(",");
  throw new ConfigError(
    `${origin}: expected ${list ? "a list of strings" : "a string or a number"}, got ${show(value)}`,
  );
}

function show(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a table";
  return `${typeof value} ${JSON.stringify(typeof value === "bigint" ? String(value) : value)}`;
}
