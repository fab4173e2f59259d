export type { CheckpointTables, SupportedDatabase } from "./savers/detect.js";
export { DrizzleSaver, type DrizzleSaverOptions, InvalidInputError } from "./savers/saver.js";
export { MsgpackSerializer, SerializationError } from "./serde/msgpack.js";
