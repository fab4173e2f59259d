import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { guardMiniflareSyncProxy } from "../helpers/miniflare.js";

// The module object miniflare itself reads its MessageChannel and receiveMessageOnPort from.
const workerThreads = createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");

/** Stands in for miniflare's class of that name: the guard recognises its channels by it. */
class SynchronousFetcher {
  readonly channel = new workerThreads.MessageChannel();
}

/** Posts `message` on `port` from another thread after `delayMs`, as miniflare's worker replies. */
function replyLater(port: import("node:worker_threads").MessagePort, message: unknown, delayMs: number): Worker {
  return new Worker(
    "const { workerData } = require('node:worker_threads'); setTimeout(() => workerData.port.postMessage(workerData.message), workerData.delayMs);",
    { eval: true, workerData: { port, message, delayMs }, transferList: [port] },
  );
}

describe("the test harness's guard of miniflare's synchronous proxy", () => {
  guardMiniflareSyncProxy();

  it("reads a reply still on its way when the caller was woken early", async () => {
    const { channel } = new SynchronousFetcher();
    const worker = replyLater(channel.port2, { id: 7 }, 50);
    // Called before the reply exists, as after the late notify of miniflare's race.
    expect(workerThreads.receiveMessageOnPort(channel.port1)?.message).toEqual({ id: 7 });
    await worker.terminate();
  });

  it("leaves every other port as it was: nothing queued reads as nothing", async () => {
    const channel = new workerThreads.MessageChannel();
    // A reply far off, so that even a slow machine reads the port before it comes.
    const worker = replyLater(channel.port2, { id: 1 }, 60_000);
    expect(workerThreads.receiveMessageOnPort(channel.port1)).toBeUndefined();
    await worker.terminate();
  });
});
