export type { CheckpointTables, SupportedDatabase } from "./savers/detect.js";
export { InvalidInputError, DrizzleSaver, type DrizzleSaverOptions } from "./savers/saver.js";
export { MsgpackSerializer, SerializationError } from "./serde/msgpack.js";
