import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Compares a presented secret with the configured one in constant time. Both are hashed first so
 * the comparison takes the same time whatever the lengths: `timingSafeEqual` alone would leak the
 * configured secret's length through its early length check.
 */
export class SecretChecker {
  readonly #digest: Buffer;

  constructor(secret: string) {
    if (secret.length === 0) throw new Error("the auth token is empty");
    this.#digest = digest(secret);
  }

  matches(presented: string): boolean {
    return timingSafeEqual(this.#digest, digest(presented));
  }
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
