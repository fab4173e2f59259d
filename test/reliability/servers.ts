import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { sleep } from "./helpers.js";

/**
 * Private database servers for the restart scenario (recovery.test.ts). The shared
 * test servers (scripts/with-databases.sh) serve other test runs at the same time,
 * so a restart there would break them: these servers belong to one test, which
 * restarts them exactly as their data directory and options say, read from the
 * server itself (`show data_directory` + pg_ctl's postmaster.opts; `@@datadir`,
 * `@@pid_file` and the server's own command line). They need the server binaries
 * and root, as scripts/with-databases.sh does.
 */

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function pgBin(): string {
  const root = "/usr/lib/postgresql";
  const version = readdirSync(root).find((v) => existsSync(join(root, v, "bin", "pg_ctl")));
  if (!version) throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql");
  return join(root, version, "bin");
}

export interface PrivateServer {
  url: string;
  /** Restarts the server the way its own settings say; returns what it restarted. */
  restart(): Promise<string>;
  stop(): Promise<void>;
}

async function privatePostgres(): Promise<PrivateServer> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), "lgcd-rel-pg-"));
  chmodSync(dir, 0o777);
  const port = await freePort();
  const asPostgres = (args: string[]) =>
    execFileSync("runuser", ["-u", "postgres", "--", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  asPostgres([join(bin, "initdb"), "-D", join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8"]);
  const log = join(dir, "log");
  asPostgres([
    join(bin, "pg_ctl"),
    "-D",
    join(dir, "data"),
    "-l",
    log,
    "-w",
    "-o",
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off`,
    "start",
  ]);
  const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  await admin`create database langgraph`;
  await admin.end();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/langgraph`,
    async restart() {
      // The data directory comes from the server; pg_ctl restart reuses the options in postmaster.opts.
      const probe = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
      const [{ data_directory: dataDirectory }] = await probe`show data_directory`;
      await probe.end();
      const options = readFileSync(join(dataDirectory, "postmaster.opts"), "utf8").trim();
      asPostgres([join(bin, "pg_ctl"), "-D", dataDirectory, "-l", log, "-w", "-m", "fast", "restart"]);
      return `pg_ctl restart -m fast of ${dataDirectory} (${options})`;
    },
    async stop() {
      asPostgres([join(bin, "pg_ctl"), "-D", join(dir, "data"), "-m", "immediate", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function privateMariadb(): Promise<PrivateServer> {
  const dir = mkdtempSync(join(tmpdir(), "lgcd-rel-mysql-"));
  const port = await freePort();
  execFileSync(
    "mariadb-install-db",
    ["--no-defaults", `--datadir=${join(dir, "data")}`, "--user=root", "--auth-root-authentication-method=normal"],
    { stdio: "ignore" },
  );
  const server = execFileSync("sh", ["-c", "command -v mariadbd || command -v mysqld"], { encoding: "utf8" }).trim();
  let process_: ChildProcess = spawn(
    server,
    [
      "--no-defaults",
      `--datadir=${join(dir, "data")}`,
      "--user=root",
      "--bind-address=127.0.0.1",
      `--port=${port}`,
      `--socket=${join(dir, "sock")}`,
      `--pid-file=${join(dir, "pid")}`,
      "--max-allowed-packet=64M",
      `--log-error=${join(dir, "error.log")}`,
    ],
    { stdio: "ignore" },
  );
  const rootUrl = `mysql://root@127.0.0.1:${port}/`;
  const waitReady = async () => {
    for (let i = 0; i < 300; i++) {
      try {
        const connection = await mysql.createConnection(rootUrl);
        await connection.end();
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error("the private MariaDB did not start");
  };
  await waitReady();
  const admin = await mysql.createConnection(rootUrl);
  await admin.query("create database langgraph character set utf8mb4");
  await admin.end();
  return {
    url: `mysql://root@127.0.0.1:${port}/langgraph`,
    async restart() {
      // Everything comes from the server: its data directory, its pid, and so its exact command line.
      const probe = await mysql.createConnection(rootUrl);
      const [[row]] = (await probe.query("select @@datadir as datadir, @@pid_file as pidFile")) as unknown as [
        { datadir: string; pidFile: string }[],
      ];
      const pid = Number(readFileSync(row.pidFile, "utf8").trim());
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (!argv.some((arg) => arg === `--datadir=${row.datadir.replace(/\/$/, "")}`)) {
        throw new Error(`server ${pid} does not run on ${row.datadir}: ${argv.join(" ")}`);
      }
      const exited = new Promise<void>((resolve) => process_.once("exit", () => resolve()));
      await probe.query("shutdown");
      await probe.end().catch(() => {});
      await exited;
      process_ = spawn(argv[0], argv.slice(1), { stdio: "ignore" });
      await waitReady();
      return `shutdown and start of ${argv.join(" ")}`;
    },
    async stop() {
      process_.kill("SIGKILL");
      await new Promise((resolve) => process_.once("exit", resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const PRIVATE_SERVERS = { postgres: privatePostgres, mysql: privateMariadb } as const;
