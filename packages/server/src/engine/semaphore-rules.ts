import { DEFAULT_LIMITS, MAX_PERMITS, validateKey } from "@lock/protocol";

/**
 * Server-side semaphore limits by key pattern (lockd's `--semaphores`): a key that matches is a
 * semaphore of that many permits whatever its acquirers say, so the server, not each client's
 * configuration, is the source of truth. An acquire of such a key with another number of permits
 * gets `LIMIT_MISMATCH` naming the configured one; one for an exclusive or shared lock gets
 * `KIND_MISMATCH`.
 */
export interface SemaphoreRule {
  /** A key, or a key prefix followed by `*` (`tenant:*`): the only wildcard, at the end. */
  readonly pattern: string;
  readonly limit: number;
}

/** The rules, matched the most specific first: an exact key, then the longest prefix. */
export class SemaphoreRules {
  readonly #exact = new Map<string, number>();
  /** Prefixes, longest first. */
  readonly #prefixes: ReadonlyArray<{ readonly prefix: string; readonly limit: number }>;

  constructor(rules: readonly SemaphoreRule[]) {
    const prefixes: Array<{ prefix: string; limit: number }> = [];
    for (const { pattern, limit } of rules) {
      if (pattern.endsWith("*")) prefixes.push({ prefix: pattern.slice(0, -1), limit });
      else this.#exact.set(pattern, limit);
    }
    this.#prefixes = prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  get size(): number {
    return this.#exact.size + this.#prefixes.length;
  }

  /** The configured permits of `key`, or undefined if no rule matches it. */
  limitOf(key: string): number | undefined {
    const exact = this.#exact.get(key);
    if (exact !== undefined) return exact;
    for (const { prefix, limit } of this.#prefixes) if (key.startsWith(prefix)) return limit;
    return undefined;
  }
}

/**
 * Parses `PATTERN=N,PATTERN=N…` (a pattern cannot hold a comma; `=` splits at the last one).
 * Returns the rules, or why the text is not valid.
 */
export function parseSemaphoreRules(text: string): SemaphoreRule[] | { readonly error: string } {
  const rules: SemaphoreRule[] = [];
  const seen = new Set<string>();
  for (const item of text.split(",")) {
    const equals = item.lastIndexOf("=");
    const pattern = item.slice(0, equals);
    const count = item.slice(equals + 1);
    if (equals <= 0 || !/^[1-9][0-9]{0,4}$/.test(count) || Number(count) > MAX_PERMITS)
      return { error: `${JSON.stringify(item)} is not PATTERN=N with N from 1 to ${MAX_PERMITS}` };
    // A key's own rules (no space, no control character), the final `*` aside, which `*` alone lacks.
    const star = pattern.indexOf("*");
    const base = star === pattern.length - 1 ? pattern.slice(0, -1) : pattern;
    if (
      validateKey(base, DEFAULT_LIMITS.maxKeyBytes) !== undefined ||
      (star >= 0 && star < pattern.length - 1)
    )
      return { error: `${JSON.stringify(pattern)}: a pattern is a key, or a key prefix and a final *` };
    if (seen.has(pattern)) return { error: `${JSON.stringify(pattern)} is given twice` };
    seen.add(pattern);
    rules.push({ pattern, limit: Number(count) });
  }
  return rules;
}
