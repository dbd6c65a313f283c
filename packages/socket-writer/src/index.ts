export { SocketWriter, type SocketWriterOptions } from "./socket-writer.js";
