/**
 * The `rekey` command: re-seals every stored value under the active key (keys from the
 * environment, cli/keys.ts), in batches, resumable, printing its progress on stderr.
 */
import type { CommandKit } from "../command-kit.js";
import { withSaver } from "../database.js";
import { UsageError } from "../errors.js";
import { ACTIVE_KEY_ENV, encryptionFromEnv, KEYS_ENV } from "../keys.js";
import type { Layout } from "../layout.js";
import { parsePositive } from "../options.js";
import type { Output } from "../output.js";

export interface RekeyCommandOptions {
  layout?: Layout;
  json?: boolean;
  batchSize?: number;
  progress?: boolean;
  /** false (--no-store): leave the store's items as they are. */
  store?: boolean;
}

async function rekey(url: string, options: RekeyCommandOptions, out: Output): Promise<void> {
  const encryption = encryptionFromEnv();
  if (!encryption) throw new UsageError(`rekey needs the keys in ${KEYS_ENV} and the active one in ${ACTIVE_KEY_ENV}`);
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    const done = await saver.rekey({
      batchSize: options.batchSize,
      store: options.store,
      onProgress: ({ values, writes, storeItems }) => {
        if (options.progress !== false) {
          out.warn(`rekey: ${values} values, ${writes} writes, ${storeItems} store items re-sealed`);
        }
      },
    });
    const status = await saver.encryptionStatus();
    if (options.json) await out.json({ activeKeyId: encryption.activeKeyId, resealed: done, ...status });
    else {
      await out.line(
        `re-sealed ${done.values} values, ${done.writes} pending writes and ${done.storeItems} store items under key "${encryption.activeKeyId}"`,
      );
      await out.line(`now     ${describeStatus(status)}`);
      if (status.store) await out.line(`store   ${describeStatus(status.store)}`);
    }
  });
}

/** "k2: 120, plaintext: 0" */
export function describeStatus(status: { keys: Record<string, number>; plaintext: number }): string {
  const parts = Object.entries(status.keys).map(([id, n]) => `${id}: ${n}`);
  parts.push(`plaintext: ${status.plaintext}`);
  return parts.join(", ");
}

export function registerEncryptionCommands({ out, tableCommand, progressOptions, target }: CommandKit): void {
  progressOptions(
    tableCommand(
      "rekey",
      `re-seal every stored value, pending write and store item under the active key, and seal plaintext rows (keys from ${KEYS_ENV}="id:base64,..." and ${ACTIVE_KEY_ENV}; resumable, safe beside running writers)`,
    )
      .option("--batch-size <n>", "rows per batch, each one transaction (default 200)", parsePositive)
      .option("--no-store", "leave the store's items as they are (a store that runs without encryption)"),
  ).action(async (options: RekeyCommandOptions & { url?: string }) => {
    const { url, layout } = target(options);
    await rekey(url, { ...options, layout }, out);
  });
}
