export { readIntoSharedBuffer } from "./shared-read.js";
export { SocketWriter, type SocketWriterOptions } from "./socket-writer.js";
