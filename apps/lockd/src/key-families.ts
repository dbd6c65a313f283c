/**
 * Key families: the label lockd's contention metrics group keys by (`--key-families`,
 * docs/operations.md "Contention by key family"). Keys are chosen by clients, so a label per key
 * would let them grow /metrics without bound: a key maps to a family by rules, and there are at
 * most `limit` families, every key past that counting under `other`.
 */

/** The family of every key whose own family would pass the cap. */
export const OTHER_FAMILY = "other";

/** Families a lockd labels by (`--key-family-limit`), besides `other`. */
export const DEFAULT_FAMILY_LIMIT = 100;

/** Keys whose family is remembered (a Map of up to this many entries, emptied when full). */
const DEFAULT_CACHE_SIZE = 65_536;

/** `NAME=REGEX`: keys the regex matches (anywhere, unless anchored) belong to family NAME. */
export interface FamilyRule {
  readonly name: string;
  readonly pattern: RegExp;
}

/**
 * Parses `--key-families`: `NAME=REGEX` entries separated by commas, tried in order, the first
 * match wins. NAME is the label value as written (no `,` or `=`); REGEX is a JavaScript regular
 * expression (no `,`: write `\x2c`). A key no rule matches takes the built-in family.
 */
export function parseFamilyRules(text: string): FamilyRule[] | { error: string } {
  const rules: FamilyRule[] = [];
  for (const entry of text.split(",")) {
    const equals = entry.indexOf("=");
    const name = entry.slice(0, equals).trim();
    const source = entry.slice(equals + 1);
    if (equals < 0 || name === "" || source === "")
      return { error: `expected NAME=REGEX[,NAME=REGEX...], got ${JSON.stringify(entry)}` };
    try {
      rules.push({ name, pattern: new RegExp(source) });
    } catch (error) {
      return { error: `${JSON.stringify(source)} is not a regular expression: ${(error as Error).message}` };
    }
  }
  return rules;
}

/**
 * The built-in family: the key up to its first `:` (kept) or its first digit, whichever comes
 * first, then `*`: `orders:42` → `orders:*`, `job-1234` → `job-*`, `user7:cart` → `user*`. A
 * key with neither is its own family (`leader`), which the cap bounds.
 */
export function builtInFamily(key: string): string {
  const cut = builtInCut(key);
  return cut < 0 ? key : `${key.slice(0, cut)}*`;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** The length of the built-in family's prefix (its `*` stands for the rest), or -1: the whole key. */
function builtInCut(key: string): number {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code === 58 /* : */) return i + 1;
    if (isDigit(code)) return i;
  }
  return -1;
}

/** Built-in families recently seen, by prefix: most keys come in runs of a few families. */
const RECENT_PREFIXES = 8;

/**
 * Maps keys to family numbers: 0 is `other`, then families in the order they were first seen, at
 * most `limit` of them. A family, once numbered, keeps its number, so a key maps to the same one
 * every time (a hold counted up under a family is counted down under it). The rules run once per
 * key while its entry stays in the cache; the cache is a plain Map emptied when full, which
 * bounds its memory and costs nothing per lookup.
 */
export class KeyFamilies {
  readonly #rules: readonly FamilyRule[];
  readonly #limit: number;
  readonly #cacheSize: number;
  readonly #cache = new Map<string, number>();
  readonly #numbers = new Map<string, number>();
  readonly #names: string[] = [OTHER_FAMILY];
  /** Recent built-in families' prefixes and numbers, newest first (see #builtInNumber). */
  readonly #recentPrefixes: string[] = [];
  readonly #recentNumbers: number[] = [];
  readonly #recentColons: boolean[] = [];

  constructor(rules: readonly FamilyRule[], limit = DEFAULT_FAMILY_LIMIT, cacheSize = DEFAULT_CACHE_SIZE) {
    this.#rules = rules;
    this.#limit = limit;
    this.#cacheSize = cacheSize;
    this.#numbers.set(OTHER_FAMILY, 0);
  }

  /** Family names by number (`other` first). */
  get names(): readonly string[] {
    return this.#names;
  }

  numberOf(key: string): number {
    // Without rules the built-in family is a few characters' scan: cheaper than hashing the key,
    // and a key seen once (a job id) would only churn the cache.
    if (this.#rules.length === 0) return this.#builtInNumber(key);
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached;
    const number = this.#number(this.nameOf(key));
    if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
    this.#cache.set(key, number);
    return number;
  }

  /** The family a key would have without the cap. */
  nameOf(key: string): string {
    for (const rule of this.#rules) if (rule.pattern.test(key)) return rule.name;
    return builtInFamily(key);
  }

  /** The family's label as /metrics shows it: `other` once the cap is reached. */
  labelOf(key: string): string {
    return this.#names[this.numberOf(key)]!;
  }

  /** The built-in family's number, found without building its name when its prefix is recent. */
  #builtInNumber(key: string): number {
    // A recent prefix has no ':' or digit but its last character (a ':' it was cut after): a key
    // that starts with it is cut at the same place if the prefix ends with ':', or if the key has
    // a digit right after it. So a hit needs no scan of the key.
    const prefixes = this.#recentPrefixes;
    for (let i = 0; i < prefixes.length; i++) {
      const prefix = prefixes[i]!;
      if (key.startsWith(prefix) && (this.#recentColons[i] || isDigit(key.charCodeAt(prefix.length))))
        return this.#recentNumbers[i]!;
    }
    const cut = builtInCut(key);
    if (cut < 0) return this.#number(key);
    const prefix = key.slice(0, cut);
    const number = this.#number(`${prefix}*`);
    if (prefixes.length >= RECENT_PREFIXES) {
      prefixes.pop();
      this.#recentNumbers.pop();
      this.#recentColons.pop();
    }
    prefixes.unshift(prefix);
    this.#recentNumbers.unshift(number);
    this.#recentColons.unshift(prefix.endsWith(":"));
    return number;
  }

  #number(name: string): number {
    const known = this.#numbers.get(name);
    if (known !== undefined) return known;
    if (this.#names.length > this.#limit) return 0;
    const number = this.#names.length;
    this.#names.push(name);
    this.#numbers.set(name, number);
    return number;
  }
}
