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
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code === 58 /* : */) return `${key.slice(0, i + 1)}*`;
    if (code >= 48 && code <= 57) return `${key.slice(0, i)}*`;
  }
  return key;
}

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
