// The JS client in Node (node:test) against real `hubcli serve` processes:
// the shared cases (also run in Chromium), the conformance vectors through the
// API, and what only Node can do here: restart and kill the broker.
//
//   HUBCLI=.build/debug/hubcli node --experimental-websocket clients/js/test/node.test.js
//   (Node >= 22 needs no flag)

import "./websocket.js";
import { after, test } from "node:test";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";

import { ErrorCode, Hub } from "../hub.js";
import { configFile, repository, startBroker, temporaryFolder } from "./broker.js";
import { cases, check, failure, same, take, unique } from "./cases.js";
import { inapplicable, parseVector, runVector } from "./conformance.js";

const TIMEOUT = { timeout: 120000 };
const token = "js-test-token";
const open = await startBroker();
const auth = await startBroker({ config: configFile(`auth:\n  tokens: [${token}]\n`) });
// The conformance vectors' broker: every new subject keeps a history (Protocol/conformance/hub.yml).
const conformance = await startBroker({ config: path.join(repository, "Protocol/conformance/hub.yml") });
const env = { url: open.url, authUrl: auth.url, token };

after(async () => {
  await open.stop();
  await auth.stop();
  await conformance.stop();
});

for (const { name, run } of cases(env)) test(name, TIMEOUT, run);

// ---- Table subjects (Protocol/conformance/hub.yml declares conformance_table) ----

test("get reads one key of a table subject: its value, undefined once deleted, not_found for another name", TIMEOUT, async () => {
  const hub = new Hub(conformance.url);
  try {
    const key = unique("k");
    same(await hub.get("conformance_table", key), undefined);
    await hub.send("conformance_table", { key, value: { n: 1 } });
    same(await hub.get("conformance_table", key), { n: 1 });
    await hub.send("conformance_table", { key, value: null });
    same(await hub.get("conformance_table", key), undefined);
    await failure(hub.send("conformance_table", { key }), ErrorCode.INVALID_VALUE);
    await failure(hub.get(unique(), "a"), ErrorCode.NOT_FOUND);
    await failure(hub.get("conformance_table", ["a"]), ErrorCode.INVALID_ARGUMENT);
  } finally {
    await hub.close();
  }
});

// ---- Conformance vectors through the API ----

const folder = path.join(repository, "Protocol/conformance/vectors");
for (const file of readdirSync(folder).filter((f) => f.endsWith(".json")).sort()) {
  const vector = parseVector(readFileSync(path.join(folder, file), "utf8"));
  const reason = inapplicable(vector);
  test(`conformance ${vector.name}`, { ...TIMEOUT, skip: reason ?? false }, () => runVector(vector, { url: conformance.url }));
}

// ---- Connection loss, reconnection, give-up (Node only: they stop the broker) ----

function recordEvents(hub) {
  const events = [];
  for (const type of ["open", "disconnect", "reconnecting"]) {
    hub.addEventListener(type, (event) => events.push({ type, detail: event.detail }));
  }
  return events;
}

/** Until the hub has heard its connection close: a stopped broker's exit can be seen before its close reaches the client. */
async function disconnected(hub, events) {
  if (events.some((e) => e.type === "disconnect")) return;
  await new Promise((resolve) => hub.addEventListener("disconnect", resolve, { once: true }));
}

/** A port nothing listens on (bound, then released). */
async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("a broker restart: subscriptions fail (shutting_down, then disconnected), the hub reconnects with back-off and waiting calls go through", TIMEOUT, async () => {
  let broker = await startBroker();
  const hub = new Hub(broker.url, { reconnect: { initialDelay: 50, maxDelay: 400 }, requestTimeout: 60000 });
  const events = recordEvents(hub);
  try {
    const name = unique();
    const first = hub.subscribe(name);
    await first.subscribed;
    const firstSession = hub.session;

    // A clean stop: the broker ends each subscription with shutting_down, then closes with 1001.
    await broker.stop("SIGTERM");
    const stopped = await failure(first.next(), ErrorCode.SHUTTING_DOWN);
    check(stopped.fromServer, "shutting_down is the broker's");
    await disconnected(hub, events);
    const waiting = hub.send(name, "after restart"); // waits for the next connection
    broker = await startBroker({ port: broker.port });
    await waiting;
    check(hub.session && hub.session !== firstSession, "a new session");

    // An abrupt end (no close frame): disconnected.
    const second = hub.subscribe(name);
    await second.subscribed;
    await broker.stop("SIGKILL");
    const lost = await failure(second.next(), ErrorCode.DISCONNECTED);
    check(lost.message.includes(new URL(broker.url).host), `the message names the hub: ${lost.message}`);
    broker = await startBroker({ port: broker.port });
    const third = hub.subscribe(name);
    await third.subscribed;
    await hub.send(name, 3);
    same(await take(third, 1), [3]);

    const types = events.map((e) => e.type);
    same(types.filter((t) => t === "open").length, 3, `opens in ${types}`);
    same(types.filter((t) => t === "disconnect").length, 2, `disconnects in ${types}`);
    check(types.includes("reconnecting"), `reconnecting in ${types}`);
    const delays = events.filter((e) => e.type === "reconnecting").map((e) => e.detail.delay);
    check(delays.every((d) => d >= 0 && d <= 400), `delays within the cap: ${delays}`);
  } finally {
    await hub.close();
    await broker.stop("SIGKILL");
  }
});

test("history: a subscription resumes across broker restarts (a durable subject after kill -9), within its demand, with offsets; a subject in memory fails with resume_failed", TIMEOUT, async () => {
  const folder = temporaryFolder("hub-js-history-");
  const config = configFile(
    `storage: {path: ${JSON.stringify(path.join(folder, "data"))}}\n` +
      "subjects:\n  orders: {durable: true, history: {size: 1000}}\n  scratch: {history: {size: 100}}\n",
  );
  let broker = await startBroker({ config });
  const hub = new Hub(broker.url, { reconnect: { initialDelay: 50, maxDelay: 400 }, requestTimeout: 60000 });
  try {
    const orders = hub.subscribe("orders", { prefetch: 0, demand: 2 });
    const scratch = hub.subscribe("scratch", { prefetch: 0, demand: "unlimited" });
    await orders.subscribed;
    await scratch.subscribed;
    check(typeof orders.epoch === "string", `an epoch: ${orders.epoch}`);
    same(orders.startOffset, 0, "the latest offset when it started");
    for (const value of [1, 2, 3]) await hub.send("orders", value);
    await hub.send("scratch", "a");
    same(await take(orders, 2), [1, 2]);
    same(orders.lastOffset, 2, "lastOffset after two values");
    same(await take(scratch, 1), ["a"]);
    const epoch = orders.epoch;

    await broker.stop("SIGKILL");
    broker = await startBroker({ port: broker.port, config });
    await hub.send("orders", 4); // waits for the reconnection
    // The demand still unmet was 0: nothing comes until more is requested, then 3 and 4 in order.
    orders.request(5);
    same(await take(orders, 2), [3, 4]);
    same(orders.lastOffset, 4, "offsets go on after the restart");
    same(orders.epoch, epoch, "a durable subject keeps its epoch");
    const lost = await failure(scratch.next(), ErrorCode.RESUME_FAILED);
    check(lost.message.includes("values were missed"), lost.message);

    // since: the last 2, and after an offset of this epoch.
    const last = hub.subscribe("orders", { since: { last: 2 } });
    same(await take(last, 2), [3, 4]);
    same(last.recovered, true, "recovered");
    const after = hub.subscribe("orders", { since: { offset: 1, epoch } });
    same(await take(after, 3), [2, 3, 4]);
    const gone = hub.subscribe("orders", { since: { offset: 1, epoch: "another" } });
    await failure(gone.next(), ErrorCode.RESUME_FAILED);
    await failure(Promise.resolve().then(() => hub.subscribe({ pipeline: "orders" }, { since: { last: 1 } })), ErrorCode.INVALID_ARGUMENT);
    await failure(Promise.resolve().then(() => hub.subscribe("orders", { since: { offset: -1 } })), ErrorCode.INVALID_ARGUMENT);
  } finally {
    await hub.close();
    await broker.stop("SIGKILL");
  }
});

test("reconnecting gives up after maxAttempts: waiting calls fail with disconnected", TIMEOUT, async () => {
  const broker = await startBroker();
  const hub = new Hub(broker.url, { reconnect: { initialDelay: 20, maxDelay: 40, maxAttempts: 3 }, requestTimeout: 60000 });
  const events = recordEvents(hub);
  try {
    await hub.connect();
    const lost = new Promise((resolve) => hub.addEventListener("disconnect", resolve, { once: true }));
    await broker.stop("SIGKILL");
    await lost;
    const error = await failure(hub.send("x", 1), ErrorCode.DISCONNECTED);
    check(error.message.includes("gave up reconnecting") && error.message.includes("3 attempts"), error.message);
    same(events.filter((e) => e.type === "reconnecting").length, 3, "attempts");
    same(hub.state, "idle", "state");
  } finally {
    await hub.close();
  }
});

test("the first connection is not retried: connection_failed names the URL", TIMEOUT, async () => {
  const port = await freePort();
  const hub = new Hub(`ws://127.0.0.1:${port}/`);
  const error = await failure(hub.send("x", 1), ErrorCode.CONNECTION_FAILED);
  check(error.message.includes(`127.0.0.1:${port}`), error.message);
  same(hub.state, "idle", "state");
  await hub.close();
});

test("a hub that never answers the handshake: timeout after connectTimeout", TIMEOUT, async () => {
  const sockets = [];
  const silent = net.createServer((socket) => sockets.push(socket));
  await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const hub = new Hub(`ws://127.0.0.1:${silent.address().port}/`, { connectTimeout: 300 });
  try {
    const error = await failure(hub.connect(), ErrorCode.TIMEOUT);
    check(error.message.includes("timed out"), error.message);
  } finally {
    await hub.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

// ---- Several URLs: the nodes of a cluster ----

test("several URLs: the first connection tries each in turn and uses the one that answers", TIMEOUT, async () => {
  const dead = `ws://127.0.0.1:${await freePort()}/`;
  const hub = new Hub([dead, open.url], { reconnect: { initialDelay: 50, maxDelay: 400 } });
  try {
    same(hub.urls, [dead, open.url], "urls");
    same(hub.url, dead, "the first URL before connecting");
    await hub.send(unique(), 1);
    same(hub.url, open.url, "the live one");
    same(hub.state, "open", "state");
  } finally {
    await hub.close();
  }
});

test("several URLs: when all fail, the first connection fails with the last failure, naming its URL", TIMEOUT, async () => {
  const first = await freePort();
  const second = await freePort();
  const hub = new Hub([`ws://127.0.0.1:${first}/`, `ws://127.0.0.1:${second}/`]);
  try {
    const error = await failure(hub.connect(), ErrorCode.CONNECTION_FAILED);
    check(error.message.includes(`127.0.0.1:${second}`), error.message);
    same(hub.state, "idle", "state");
  } finally {
    await hub.close();
  }
});

test("several URLs: when its node is killed, the hub reconnects to the next one", TIMEOUT, async () => {
  const a = await startBroker();
  const b = await startBroker();
  const hub = new Hub([a.url, b.url], { reconnect: { initialDelay: 50, maxDelay: 400 }, requestTimeout: 60000 });
  const events = recordEvents(hub);
  try {
    const name = unique();
    const live = hub.subscribe(name);
    await live.subscribed;
    same(hub.url, a.url, "connected to A");
    const firstSession = hub.session;

    await a.stop("SIGKILL");
    // A subject without history: the subscription fails as on a lone broker.
    await failure(live.next(), ErrorCode.DISCONNECTED);
    const watcher = new Hub(b.url);
    try {
      const onB = watcher.subscribe(name);
      await onB.subscribed;
      await hub.send(name, "after the loss"); // waits for the reconnection, to B
      same(await take(onB, 1), ["after the loss"]);
    } finally {
      await watcher.close();
    }
    same(hub.url, b.url, "now on B");
    check(hub.session && hub.session !== firstSession, "a new session");
    const types = events.map((e) => e.type);
    same(types.filter((t) => t === "open").length, 2, `opens in ${types}`);
    same(types.filter((t) => t === "disconnect").length, 1, `disconnects in ${types}`);
  } finally {
    await hub.close();
    await a.stop("SIGKILL");
    await b.stop("SIGKILL");
  }
});

test("several URLs: an invalid one is refused, naming it; an empty list is refused", TIMEOUT, async () => {
  for (const bad of ["http://127.0.0.1:1/", "not a url"]) {
    try {
      new Hub([open.url, bad]);
      throw new Error(`accepted ${bad}`);
    } catch (error) {
      same(error.code, ErrorCode.INVALID_URL, `invalid_url for ${bad}: ${error}`);
      check(error.message.includes(bad), `the message names ${bad}: ${error.message}`);
    }
  }
  try {
    new Hub([]);
    throw new Error("accepted []");
  } catch (error) {
    same(error.code, ErrorCode.INVALID_URL, `invalid_url for []: ${error}`);
    check(error.message.includes("no server URL"), error.message);
  }
});
