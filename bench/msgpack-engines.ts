/**
 * msgpackr against @msgpack/msgpack on the values the growing-message workload stores
 * (issue 14): a message list of 10 and of 50 messages, one appended message (what a
 * delta row holds), and a checkpoint without its values. CPU microseconds per encode
 * and per decode, interleaved rounds, median.
 *
 *   npm install --no-save msgpackr && npx tsx bench/msgpack-engines.ts
 *
 * msgpackr is not a dependency of the project (it was measured, not adopted: see
 * BENCHMARKS.md), and its optional native parts cannot all be recorded in the lock file
 * here, which breaks `npm ci`; so it is installed for this run only.
 *
 * Three ways per value:
 * - "saver": our MsgpackSerializer as it runs (messages compacted to extension 10,
 *   nesting bounds, the bounds check before decoding): what a put and a read pay.
 * - "@msgpack/msgpack" and "msgpackr": the bare engines on the same data in plain form
 *   (each message as its [class name, fields] pair), no extensions: the engine's own share.
 * - "msgpackr reads saver bytes": msgpackr decoding what the saver wrote, extension 10
 *   registered (a reader-only switch would have to do this for every existing row).
 */

import { uuid6 } from "@langchain/langgraph-checkpoint";
import { Decoder, Encoder } from "@msgpack/msgpack";
import { compactMessage, reviveLangChain } from "../src/serde/messages.js";
import { MsgpackSerializer } from "../src/serde/msgpack.js";
import { median } from "./stats.js";
import { message } from "./workload.js";

/** The parts of msgpackr this bench uses. */
interface Msgpackr {
  Packr: new (options: object) => { pack(value: unknown): Uint8Array };
  Unpackr: new (options: object) => { unpack(bytes: Uint8Array): unknown };
  addExtension(extension: { type: number; unpack: (bytes: Uint8Array) => unknown }): void;
}

async function loadMsgpackr(): Promise<Msgpackr> {
  // A variable: msgpackr is not a dependency, so the type check must not resolve it.
  const name = "msgpackr";
  try {
    return (await import(name)) as Msgpackr;
  } catch {
    throw new Error("msgpackr is not installed: run `npm install --no-save msgpackr` first");
  }
}

const ROUNDS = Number(process.env.ENGINE_ROUNDS ?? 7);
const MIN_MS = 150;

/** CPU microseconds per call of `run`, repeated for at least MIN_MS of CPU. */
function cpuMicros(run: () => unknown): number {
  let calls = 0;
  const start = process.cpuUsage();
  let spent = 0;
  while (spent < MIN_MS * 1000) {
    for (let i = 0; i < 50; i++) run();
    calls += 50;
    const used = process.cpuUsage(start);
    spent = used.user + used.system;
  }
  return spent / calls;
}

async function main(): Promise<void> {
  const serde = new MsgpackSerializer();
  const messages = (n: number) => Array.from({ length: n }, (_, i) => message(7, i));
  const plain = (list: object[]) => list.map((m) => compactMessage(m));
  const checkpoint = {
    v: 4,
    id: uuid6(3),
    ts: new Date().toISOString(),
    channel_versions: {
      messages: "00000000000000000000000000000010.1234",
      counter: "00000000000000000000000000000010.5678",
    },
    versions_seen: { agent: { messages: "00000000000000000000000000000009.1234" } },
  };
  const values: Record<string, { live: unknown; plain: unknown }> = {
    "10 messages": { live: messages(10), plain: plain(messages(10)) },
    "50 messages": { live: messages(50), plain: plain(messages(50)) },
    "1 message (a delta)": { live: messages(1), plain: plain(messages(1)) },
    checkpoint: { live: checkpoint, plain: checkpoint },
  };

  const { Packr, Unpackr, addExtension } = await loadMsgpackr();
  const encoder = new Encoder();
  const decoder = new Decoder();
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const unpackr = new Unpackr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
  // What a reader-only switch needs: our message extension (10) decoded by msgpackr.
  const reading = new Unpackr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
  addExtension({
    type: 10,
    unpack: (bytes: Uint8Array) => {
      const [name, fields] = reading.unpack(bytes) as [string, unknown];
      return reviveLangChain({ lc: 1, type: "constructor", id: ["langchain_core", "messages", name], kwargs: fields });
    },
  });

  console.log("| value | way | bytes | encode us | decode us |");
  console.log("| --- | --- | ---: | ---: | ---: |");
  for (const [name, { live, plain: data }] of Object.entries(values)) {
    const [, saved] = await serde.dumpsTyped(live);
    const ways: Record<string, { bytes: number; encode?: () => unknown; decode: () => unknown }> = {
      saver: {
        bytes: saved.length,
        // The serializer's methods are async only by signature; the work is synchronous.
        encode: () => serde.dumpsTyped(live),
        decode: () => serde.loadsTyped("msgpack", saved),
      },
      "@msgpack/msgpack": (() => {
        const bytes = encoder.encode(data);
        return { bytes: bytes.length, encode: () => encoder.encode(data), decode: () => decoder.decode(bytes) };
      })(),
      msgpackr: (() => {
        const bytes = packr.pack(data);
        return { bytes: bytes.length, encode: () => packr.pack(data), decode: () => unpackr.unpack(bytes) };
      })(),
      "msgpackr reads saver bytes": { bytes: saved.length, decode: () => reading.unpack(saved) },
    };
    const samples = new Map<string, { encode: number[]; decode: number[] }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [way, { encode, decode }] of Object.entries(ways)) {
        const entry = samples.get(way) ?? { encode: [], decode: [] };
        if (encode) entry.encode.push(cpuMicros(encode));
        entry.decode.push(cpuMicros(decode));
        samples.set(way, entry);
      }
    }
    for (const [way, { encode, decode }] of samples) {
      const us = (values: number[]) => (values.length === 0 ? "-" : median(values).toFixed(2));
      console.log(`| ${name} | ${way} | ${ways[way].bytes} | ${us(encode)} | ${us(decode)} |`);
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
