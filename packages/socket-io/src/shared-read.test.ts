import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { readIntoSharedBuffer } from "./shared-read.js";

describe("readIntoSharedBuffer", () => {
  it("leaves a socket without a handle as it was, so the caller reads it with 'data' events", () => {
    // What a Node whose internals differ would look like: no `_handle` to move.
    const socket = { _handle: null, destroy: () => expect.unreachable() } as unknown as Socket;
    expect(readIntoSharedBuffer(socket, () => {})).toBeUndefined();
  });
});
