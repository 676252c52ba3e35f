// Starts a real `hubcli serve` for the Node tests (HUBCLI: its path; default the
// package's debug build).

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repository = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const hubcli = process.env.HUBCLI ?? path.join(repository, ".build/debug/hubcli");

const folders = [];
process.on("exit", () => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A fresh temporary folder named `prefix`…, removed when the test process exits. */
export function temporaryFolder(prefix = "hub-js-test-") {
  const folder = mkdtempSync(path.join(tmpdir(), prefix));
  folders.push(folder);
  return folder;
}

/** A YAML file with `text` in a fresh temporary folder. */
export function configFile(text) {
  const file = path.join(temporaryFolder(), "hub.yml");
  writeFileSync(file, text);
  return file;
}

/**
 * Starts the broker on 127.0.0.1 (`port` 0: a free one) and resolves once it
 * listens: {url, port, stop(signal), child}.
 */
export async function startBroker({ config, port = 0 } = {}) {
  const args = ["serve", "--host", "127.0.0.1", "--port", String(port)];
  if (config) args.push("--config", config);
  const child = spawn(hubcli, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the broker did not start within 60 s:\n${log}`)), 60000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const found = /hubcli: listening on (ws:\S+)/.exec(log);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${hubcli}: ${error.message}`));
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the broker exited (${code ?? signal}):\n${log}`));
    });
  });
  child.stderr.resume();
  const exited = once(child, "exit");
  return {
    url,
    port: Number(new URL(url).port),
    child,
    /** Stops it with `signal` and waits for the process to end. */
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
