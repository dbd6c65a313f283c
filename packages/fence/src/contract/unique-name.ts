import { randomBytes } from "node:crypto";

/** `prefix` plus 12 random hex digits: resources, tables and keys no other test run uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}
