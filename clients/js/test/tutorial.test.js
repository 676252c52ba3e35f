// docs/tutorial-todo.md stays true: the listings marked `<!-- file: PATH -->`
// are those files, and every YAML listing is a configuration the broker
// accepts (`hubcli serve --check-config`). The page itself is driven in
// Chromium by run_browser.py.

import { test } from "node:test";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

import { configFile, hubcli, repository } from "./broker.js";
import { check, same } from "./cases.js";

const markdown = readFileSync(path.join(repository, "docs/tutorial-todo.md"), "utf8");
const blocks = [...markdown.matchAll(/(?:<!-- file: (\S+) -->\n)?```(\w*)\n([\s\S]*?)```\n/g)].map(([, file, language, body]) => ({
  file,
  language,
  body,
}));

test("the tutorial's file listings are the files", () => {
  const listed = blocks.filter((b) => b.file);
  same(listed.map((b) => b.file), ["docs/tutorial-todo/hub.yml", "docs/tutorial-todo/index.html"], "listed files");
  for (const { file, body } of listed) {
    const actual = readFileSync(path.join(repository, file), "utf8");
    check(actual === body, `${file} differs from its listing in docs/tutorial-todo.md`);
  }
});

test("every configuration in the tutorial passes hubcli serve --check-config", async () => {
  const configurations = blocks.filter((b) => b.language === "yaml");
  check(configurations.length >= 4, `found ${configurations.length} yaml listings`);
  for (const { body } of configurations) {
    const file = configFile(body);
    try {
      const { stdout } = await promisify(execFile)(hubcli, ["serve", "--config", file, "--check-config"]);
      check(stdout.includes(": ok"), stdout);
    } catch (error) {
      throw new Error(`hubcli serve --check-config refuses a tutorial listing:\n${body}\n${error.stderr ?? error}`);
    }
  }
});
