/** Keys for the encryption tests: fixed, so a failure can be reproduced; never use them elsewhere. */
import type { EncryptionOptions } from "../../src/index.js";

export const KEY_1 = Buffer.alloc(32, 1);
export const KEY_2 = Buffer.alloc(32, 2).toString("base64");

export const TEST_ENCRYPTION: EncryptionOptions = { keys: { k1: KEY_1 }, activeKeyId: "k1" };
