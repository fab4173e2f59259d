// Child process for the concurrent-setup test: applies the migrations to the database at argv[2].
import { DrizzleSaver } from "../../src/index.js";

const saver = await DrizzleSaver.fromUrl(process.argv[2] ?? "");
try {
  await saver.setup();
} finally {
  await saver.close();
}
