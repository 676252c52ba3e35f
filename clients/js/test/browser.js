// Runs the shared cases and the conformance vectors in the browser; the result
// list is `window.hubTestResults` (a promise), read by run_browser.py over the
// DevTools protocol, and is also drawn on the page.

import { cases } from "./cases.js";
import { parseVector, runVectors } from "./conformance.js";

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function show(result) {
  const item = document.createElement("li");
  item.textContent = `${result.status.toUpperCase()} ${result.name}${result.detail ? `: ${result.detail}` : ""}`;
  document.querySelector("#results").append(item);
}

async function main() {
  const config = await (await fetch("/__config.json")).json();
  const results = [];
  for (const { name, run } of cases(config)) {
    try {
      await withTimeout(run(), 60000, name);
      results.push({ name, status: "pass" });
    } catch (error) {
      results.push({ name, status: "fail", detail: `${error?.stack ?? error}` });
    }
    show(results.at(-1));
  }
  const vectors = [];
  for (const file of config.vectors) {
    const vector = parseVector(await (await fetch(`/Protocol/conformance/vectors/${file}`)).text());
    vectors.push({ name: `conformance ${vector.name}`, vector });
  }
  for (const result of await runVectors(vectors, { url: config.conformanceUrl })) {
    results.push(result);
    show(result);
  }
  return results;
}

window.hubTestResults = main().catch((error) => [{ name: "the browser test page", status: "fail", detail: `${error?.stack ?? error}` }]);
