/** `host:port` parsing for flags: `127.0.0.1:7420`, `[::1]:7420`, `lock-a.internal:7420`. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export function parseHostPort(text: string, what: string): HostPort {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[3]) : Number.NaN;
  if (!match || port > 65_535) throw new ConfigError(`${what}: expected host:port, got "${text}"`);
  return { host: (match[1] ?? match[2])!, port };
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** A configuration mistake: lockd prints it and exits with status 2, before binding anything. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly code = "LOCKD_CONFIG";
}
