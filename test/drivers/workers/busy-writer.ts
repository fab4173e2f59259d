// Writes enough to start the background checkpointer and never closes: the process must still exit on its own.
import { walCheckpointerOf } from "../../../src/drivers/wal-checkpointer.js";
import { DrizzleSaver } from "../../../src/index.js";
import { argument, emit } from "../../reliability/workers/io.js";
import { writeSteps } from "../wal-writes.js";

const { file } = argument<{ file: string }>();
const { default: Database } = await import("better-sqlite3");
const { drizzle } = await import("drizzle-orm/better-sqlite3");
const sqlite = new Database(file);
sqlite.pragma("journal_mode = WAL");
const saver = new DrizzleSaver(drizzle(sqlite));
await saver.setup();
const checkpointer = walCheckpointerOf(sqlite);
while ((checkpointer?.checkpoints() ?? 0) === 0) await writeSteps(saver, "busy", 20);
emit({ kind: "started" });
