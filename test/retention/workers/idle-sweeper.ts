// Starts a sweeper and never stops it: the process must still exit on its own.
import { DrizzleSaver } from "../../../src/index.js";
import { argument, emit } from "../../reliability/workers/io.js";

const { url } = argument<{ url: string }>();
const saver = await DrizzleSaver.fromUrl(url, { retention: { idleFor: "30d", strategy: "delete" } });
saver.startSweeper({ intervalMs: 60_000, onSweep: (result) => emit({ kind: "swept", ...result }) });
emit({ kind: "started" });
