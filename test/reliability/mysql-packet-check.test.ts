/**
 * The MySQL dialect asks the server's max_allowed_packet once, before its first large
 * write unit (mysql-units.ts). A connection dropped while it asked must fail that one
 * write only: the same saver's later large writes ask again. The connection is dropped
 * by a TCP relay between the saver and the shared MariaDB server, cut exactly when the
 * question passes through it.
 */
import { createServer, type Server, type Socket } from "node:net";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshSaver } from "../helpers/databases.js";
import { checkpointOf } from "./helpers.js";

/** A relay to `target` that drops the connection carrying the next packet containing `cutOn`, when set. */
class CuttingRelay {
  cutOn: string | undefined;
  cuts = 0;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  constructor(private readonly target: URL) {
    this.server = createServer((client) => {
      const upstream = new (client.constructor as typeof Socket)();
      upstream.connect(Number(target.port), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => {});
      }
      client.on("data", (data: Buffer) => {
        if (this.cutOn !== undefined && data.includes(this.cutOn)) {
          this.cutOn = undefined;
          this.cuts += 1;
          client.destroy();
          upstream.destroy();
          return;
        }
        upstream.write(data);
      });
      upstream.on("data", (data: Buffer) => client.write(data));
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  /** The URL of the target database through the relay. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    const url = new URL(this.target);
    url.hostname = "127.0.0.1";
    url.port = String(typeof address === "object" && address ? address.port : 0);
    return url.toString();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe("mysql: the max_allowed_packet question", () => {
  let relay: CuttingRelay;
  let saver: DrizzleSaver;

  beforeAll(async () => {
    const fresh = await freshSaver("mysql");
    await fresh.saver.close();
    relay = new CuttingRelay(new URL(fresh.url));
    saver = await DrizzleSaver.fromUrl(await relay.listen());
  });

  afterAll(async () => {
    await saver?.close();
    await relay?.close();
  });

  it("is asked again after the connection asking it was dropped: one large write fails, not every later one", async () => {
    // About 2 MB in the statement: a unit large enough to be checked against max_allowed_packet.
    const large = (label: string) => {
      const versions = { big: String(saver.getNextVersion(undefined)) };
      const values = { big: { label, text: "x".repeat(1024 * 1024) } };
      return { checkpoint: checkpointOf(uuid6(-1), values, versions), versions };
    };
    const meta = { source: "loop" as const, step: 0, parents: {} };

    relay.cutOn = "max_allowed_packet";
    const first = large("first");
    await expect(
      saver.put({ configurable: { thread_id: "packet" } }, first.checkpoint, meta, first.versions),
    ).rejects.toThrow();
    expect(relay.cuts).toBe(1);

    const second = large("second");
    const saved = await saver.put({ configurable: { thread_id: "packet" } }, second.checkpoint, meta, second.versions);
    const tuple = await saver.getTuple(saved);
    expect(tuple?.checkpoint.channel_values.big).toMatchObject({ label: "second" });
  });
});
