import { createRequire } from "node:module";
import type { drizzle } from "drizzle-orm/d1";
import { Miniflare } from "miniflare";

/** A D1 binding, as drizzle-orm/d1 takes it. */
export type D1Binding = Parameters<typeof drizzle>[0];

/** A local D1 in its own workerd process, and the binding drizzle-orm/d1 takes. */
export async function openLocalD1(): Promise<{ miniflare: Miniflare; binding: D1Binding }> {
  guardMiniflareSyncProxy();
  noKeepAliveToWorkerd();
  const miniflare = new Miniflare({
    modules: true,
    script: "export default { fetch: () => new Response(null, { status: 404 }) };",
    d1Databases: ["DB"],
  });
  const binding = (await miniflare.getD1Database("DB")) as unknown as D1Binding;
  return { miniflare, binding };
}

/** Gives up waiting for a reply after this long (then miniflare's own assertion fails as before). */
const REPLY_WAIT_MS = 60_000;

let guarded = false;

/**
 * Works around a race in miniflare 3's synchronous binding proxy (every D1 `prepare` and
 * `bind` from Node goes through it): its worker thread queues the reply, sets a flag and
 * then notifies; when the thread is preempted between the flag and the notify, the late
 * notify wakes the caller's next wait before that call's reply exists,
 * `receiveMessageOnPort` returns nothing and the proxy asserts, out of step for the rest
 * of the instance's life. It failed one of five full test runs on our 2-core machine under
 * load. Fixed upstream in miniflare 4 (cloudflare/workers-sdk#15552), which needs Node 22.
 *
 * miniflare looks `MessageChannel` and `receiveMessageOnPort` up on the `worker_threads`
 * module at each call, so the guard marks the channels its SynchronousFetcher creates and,
 * for those ports only, waits for the reply that is on its way instead of returning
 * nothing. Replies come in order, so the reply then read is the call's own. Every other
 * port behaves exactly as before.
 */
export function guardMiniflareSyncProxy(): void {
  if (guarded) return;
  guarded = true;
  const workerThreads = createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");
  const { MessageChannel: OriginalChannel, receiveMessageOnPort: originalReceive } = workerThreads;
  const proxyPorts = new WeakSet<object>();
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  workerThreads.MessageChannel = function MessageChannel() {
    const channel = new OriginalChannel();
    if (new Error().stack?.includes("SynchronousFetcher")) proxyPorts.add(channel.port1);
    return channel;
  } as unknown as typeof OriginalChannel;
  workerThreads.receiveMessageOnPort = (port) => {
    let received = originalReceive(port);
    if (received !== undefined || !proxyPorts.has(port)) return received;
    const deadline = Date.now() + REPLY_WAIT_MS;
    while (received === undefined && Date.now() < deadline) {
      Atomics.wait(sleeper, 0, 0, 1); // the caller is blocked anyway: sleep 1 ms, look again
      received = originalReceive(port);
    }
    return received;
  };
}

let keepAliveOff = false;

/**
 * Works around a second race of miniflare 3, between its Node side and workerd: every
 * asynchronous D1 call (a batch, a query) is an HTTP request to workerd over undici's
 * keep-alive connections, and a request sent on a connection that workerd is closing
 * fails with "SocketError: other side closed" (undici retries no POST). Under load, 16
 * writers' batches hit it (a socket that had carried one reply, then the next request
 * was written and the socket closed). Requests to workerd open a connection each
 * instead (`pipelining: 0`: no keep-alive); on loopback that costs little.
 *
 * miniflare looks `Pool` up on the `undici` module when it connects to workerd, so the
 * pools it makes from then on are made with that option.
 */
function noKeepAliveToWorkerd(): void {
  if (keepAliveOff) return;
  keepAliveOff = true;
  const requireFromMiniflare = createRequire(createRequire(import.meta.url).resolve("miniflare"));
  const undici = requireFromMiniflare("undici") as { Pool: new (url: unknown, options?: object) => object };
  const OriginalPool = undici.Pool;
  undici.Pool = class extends OriginalPool {
    constructor(url: unknown, options: object = {}) {
      super(url, { ...options, pipelining: 0 });
    }
  } as typeof undici.Pool;
}
