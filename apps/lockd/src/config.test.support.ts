import { type LockdConfig, parseConfig } from "./config.js";

/**
 * parseConfig over an in-memory file system (`files` by path; any other path is ENOENT): its
 * `readFile`, and `config(argv, env)` for a configuration that is neither --help nor --version.
 */
export function configOver(files: Readonly<Record<string, string>>) {
  const readFile = (path: string) => {
    const content = files[path];
    if (content === undefined) throw Object.assign(new Error("no such file"), { code: "ENOENT" });
    return Buffer.from(content);
  };
  const config = (argv: string[], env: NodeJS.ProcessEnv = {}): LockdConfig => {
    const parsed = parseConfig(argv, env, readFile);
    if (parsed.help || parsed.version) throw new Error("unexpected --help or --version");
    return parsed.config;
  };
  return { readFile, config };
}
