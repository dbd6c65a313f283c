export { fastIoEnabled, useFastIo } from "./fast-io.js";
export { readIntoSharedBuffer } from "./shared-read.js";
export { SocketWriter, type SocketWriterOptions } from "./socket-writer.js";
