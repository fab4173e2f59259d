// Starts a store's sweeper and never stops it: the process must still exit on its own.
import { DrizzleStore } from "../../../src/index.js";
import { argument, emit } from "../../reliability/workers/io.js";

const { url } = argument<{ url: string }>();
const store = await DrizzleStore.fromUrl(url, { ttl: { defaultTtl: 10, sweepIntervalMinutes: 1 } });
store.start();
emit({ kind: "started" });
