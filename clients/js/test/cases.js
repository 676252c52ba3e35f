// Test cases of the JS client that run unchanged in Node (node.test.js) and in
// headless Chromium (browser.html), each against a real `hubcli serve`.
//
// env: {url, authUrl, token}: an open broker, and one whose config requires `token`.

import { ErrorCode, Hub, HubError } from "../hub.js";

// ---- A small assertion kit (no node:assert in a browser) ----

export class AssertionError extends Error {}

export function check(condition, message) {
  if (!condition) throw new AssertionError(message);
}

export function same(actual, expected, what = "value") {
  const a = show(actual);
  const e = show(expected);
  if (a !== e) throw new AssertionError(`${what}: expected ${e}, got ${a}`);
}

function show(value) {
  return JSON.stringify(value, (key, v) => {
    if (typeof v === "bigint") return `${v}n`;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]));
    }
    return v;
  });
}

/** Awaits `promise` and returns the HubError it rejects with (fails if it resolves or rejects otherwise). */
export async function failure(promise, code) {
  try {
    await promise;
  } catch (error) {
    check(error instanceof HubError, `expected a HubError, got ${error}`);
    if (code) same(error.code, code, `error code (${error.message})`);
    return error;
  }
  throw new AssertionError(`expected a failure${code ? ` with ${code}` : ""}, but it succeeded`);
}

/** The next `count` values of an iterator. */
export async function take(subscription, count) {
  const values = [];
  while (values.length < count) {
    const { value, done } = await subscription.next();
    check(!done, `the subscription ended after ${values.length} of ${count} values`);
    values.push(value);
  }
  return values;
}

let counter = 0;
/** A name unique to this run (tests share one broker). */
export function unique(prefix = "s") {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}_${counter}`;
}

/** A WebSocket class that records every message the client sends and receives (a real WebSocket underneath). */
export function recordingWebSocket() {
  const sent = [];
  const received = [];
  class RecordingWebSocket extends globalThis.WebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => received.push(JSON.parse(event.data)));
    }
    send(data) {
      sent.push(JSON.parse(data));
      super.send(data);
    }
  }
  return { WebSocket: RecordingWebSocket, sent, received };
}

/** Subscribes without demand, sends `count` values (the hub buffers them), then asks for them
 * all at once, so that a batching hub may send them in few messages; returns what next() gave. */
async function bufferedThenTaken(hub, name, count, options = {}) {
  const subscription = hub.subscribe(name, { prefetch: 0, ...options });
  await subscription.subscribed;
  for (let n = 0; n < count; n += 1) await hub.send(name, { n });
  subscription.request(count);
  const values = await take(subscription, count);
  subscription.cancel();
  return values;
}

const numbered = (count) => Array.from({ length: count }, (_, n) => ({ n }));

/** Runs `body(hub, ...)` with a fresh hub, closing it afterwards. */
async function withHub(url, options, body) {
  const hub = new Hub(url, options);
  try {
    return await body(hub);
  } finally {
    await hub.close();
  }
}

// ---- The cases ----

export function cases(env) {
  const { url, authUrl, token } = env;
  return [
    {
      name: "send and subscribe: values in order, kind, delivered count",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name, { prefetch: 4 });
          same(await subscription.subscribed, "subject", "kind");
          for (const value of [1, "two", { three: [3] }, null, false]) await hub.send(name, value);
          same(await take(subscription, 5), [1, "two", { three: [3] }, null, false]);
          same(subscription.delivered, 5, "delivered");
          subscription.cancel();
        });
      },
    },
    {
      name: "complete ends the iterator; send to a completed subject is the hub's `completed`",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name);
          await subscription.subscribed;
          await hub.send(name, 1);
          await hub.complete(name);
          const seen = [];
          for await (const value of subscription) seen.push(value);
          same(seen, [1]);
          await subscription.done;
          const error = await failure(hub.send(name, 2), ErrorCode.COMPLETED);
          check(error.fromServer, "completed comes from the server");
        });
      },
    },
    {
      name: "fail ends the iterator with the hub's `failed` and the error value",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name);
          await subscription.subscribed;
          await hub.fail(name, { reason: "feed down" });
          const error = await failure(subscription.next(), ErrorCode.FAILED);
          same(error.data, { reason: "feed down" }, "data");
          same(await subscription.next(), { value: undefined, done: true }, "after the failure");
          await failure(subscription.done, ErrorCode.FAILED);
        });
      },
    },
    {
      name: "trigger with and without a key; a subject's name is not a trigger",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique("t");
          // trigger(name) in a pipeline creates the trigger; then the name subscribes to it.
          const keyed = hub.subscribe({ pipeline: `trigger(${name}, "page2")` });
          same(await keyed.subscribed, "pipeline", "kind");
          const all = hub.subscribe(name);
          same(await all.subscribed, "trigger", "kind");
          await hub.trigger(name);
          await hub.trigger(name, "page2");
          same(await take(all, 2), [null, "page2"]);
          same(await take(keyed, 1), ["page2"]);
          const subject = unique();
          await hub.send(subject, 1);
          await failure(hub.trigger(subject), ErrorCode.NOT_FOUND);
        });
      },
    },
    {
      name: "list answers the catalog with subscriber counts",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name);
          await subscription.subscribed;
          const catalog = await hub.list();
          const entry = catalog.subjects.find((s) => s.name === name);
          same(entry, { name, kind: "passthrough", subscribers: 1, state: "open" }, "catalog entry");
          check(Array.isArray(catalog.pipelines) && Array.isArray(catalog.triggers), "pipelines and triggers");
          subscription.cancel();
          const after = await hub.list();
          same(after.subjects.find((s) => s.name === name).subscribers, 0, "subscribers after cancel");
        });
      },
    },
    {
      name: "listPage pages the catalog after a cursor; list joins every page",
      async run() {
        await withHub(url, {}, async (hub) => {
          const base = unique();
          const names = [0, 1, 2, 3, 4].map((i) => `${base}_${i}`);
          for (const name of names) await hub.send(name, 1);
          const first = await hub.listPage({ after: `s:${base}`, limit: 2 });
          same(first.subjects.map((s) => s.name), names.slice(0, 2), "first page");
          same(first.next, `s:${names[1]}`, "next");
          const second = await hub.listPage({ after: first.next, limit: 2 });
          same(second.subjects.map((s) => s.name), names.slice(2, 4), "second page");
          const whole = await hub.list();
          same(whole.next, undefined, "no next on the whole catalog");
          same(whole.subjects.map((s) => s.name).filter((n) => n.startsWith(base)), names, "every name once");
          await failure(hub.listPage({ limit: 0 }), ErrorCode.INVALID_ARGUMENT);
          await failure(hub.listPage({ after: "nonsense" }), ErrorCode.BAD_MESSAGE);
        });
      },
    },
    {
      name: "a pipeline that does not compile: subscribed and next reject with pipeline_error and its position",
      async run() {
        await withHub(url, {}, async (hub) => {
          const subscription = hub.subscribe({ pipeline: "sequence([1, 2" });
          const error = await failure(subscription.subscribed, ErrorCode.PIPELINE_ERROR);
          same(error.data, { line: 1, column: 15 }, "data");
          await failure(subscription.next(), ErrorCode.PIPELINE_ERROR);
          const typo = hub.subscribe({ pipeline: "sequence([1]) | mapp(.)" });
          await failure(typo.subscribed, ErrorCode.PIPELINE_ERROR);
        });
      },
    },
    {
      name: "next() is demand: the subscribe carries the prefetch window, each half window consumed is requested again",
      async run() {
        const recording = recordingWebSocket();
        await withHub(url, { WebSocket: recording.WebSocket }, async (hub) => {
          const subscription = hub.subscribe({ pipeline: "sequence([1,2,3,4,5,6,7,8,9,10])" }, { prefetch: 4 });
          const seen = [];
          for await (const value of subscription) {
            seen.push(value);
            check(subscription.requested - seen.length <= 4, `more than the window requested: ${subscription.requested} after ${seen.length}`);
          }
          same(seen, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
          const id = subscription.id;
          const subscribe = recording.sent.find((m) => m.op === "subscribe" && m.id === id);
          same(subscribe.demand, 4, "subscribe demand");
          const requests = recording.sent.filter((m) => m.op === "request" && m.id === id).map((m) => m.n);
          check(requests.length >= 3 && requests.every((n) => n === 2), `requests of half a window: ${JSON.stringify(requests)}`);
        });
      },
    },
    {
      name: "prefetch 0: nothing flows but what request(n) grants",
      async run() {
        await withHub(url, {}, async (hub) => {
          const subscription = hub.subscribe({ pipeline: "sequence([1, 2, 3])" }, { prefetch: 0 });
          await subscription.subscribed;
          await hub.list(); // a round trip: a cold sequence with no demand sends nothing
          same(subscription.delivered, 0, "delivered without demand");
          subscription.request(2);
          same(await take(subscription, 2), [1, 2]);
          await hub.list(); // the sequence answers a request at once: 3 would be here by now
          same(subscription.delivered, 2, "delivered after request(2)");
          subscription.request(1);
          same(await take(subscription, 1), [3]);
          same(await subscription.next(), { value: undefined, done: true }, "the end");
          const initial = hub.subscribe({ pipeline: "sequence([7, 8])" }, { prefetch: 0, demand: 1 });
          same(await take(initial, 1), [7]);
          await hub.list();
          same(initial.delivered, 1, "delivered with demand 1");
          initial.cancel();
        });
      },
    },
    {
      name: "ReadableStream: pull() is demand, values arrive in order through pipeTo",
      async run() {
        await withHub(url, {}, async (hub) => {
          const values = Array.from({ length: 50 }, (_, i) => i);
          const subscription = hub.subscribe({ pipeline: `sequence(${JSON.stringify(values)})` }, { prefetch: 4 });
          const written = [];
          await subscription.readable.pipeTo(
            new WritableStream({
              write(value) {
                written.push(value);
                check(subscription.requested - written.length <= 8, `requested ${subscription.requested} after ${written.length}`);
              },
            }),
          );
          same(written, values);
        });
      },
    },
    {
      name: "ReadableStream back pressure reaches the broker: a stalled pipeTo overflows the hub's buffer",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name, { prefetch: 4, buffer: 8, overflow: "error" });
          await subscription.subscribed;
          let release;
          const gate = new Promise((resolve) => (release = resolve));
          const written = [];
          const piping = subscription.readable.pipeTo(
            new WritableStream({
              async write(value) {
                written.push(value);
                await gate;
              },
            }),
          );
          piping.catch(() => {});
          // The sink holds the first value: the client stops asking, the hub buffers 8, then overflows.
          for (let i = 0; i < 40; i += 1) await hub.send(name, i);
          release();
          const error = await failure(piping, ErrorCode.OVERFLOW);
          check(error.fromServer, "overflow comes from the hub");
          check(written.length <= 4 + 8 + 2, `the stalled pipe took only the window and the buffer, took ${written.length}`);
          same(written, Array.from({ length: written.length }, (_, i) => i), "values before the overflow");
        });
      },
    },
    {
      name: "breaking out of for-await cancels the remote subscription",
      async run() {
        const recording = recordingWebSocket();
        await withHub(url, { WebSocket: recording.WebSocket }, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name);
          await subscription.subscribed;
          await hub.send(name, 1);
          for await (const value of subscription) {
            same(value, 1);
            break;
          }
          check(subscription.ended, "ended");
          check(recording.sent.some((m) => m.op === "cancel" && m.id === subscription.id), "cancel sent");
          const catalog = await hub.list();
          same(catalog.subjects.find((s) => s.name === name).subscribers, 0, "subscribers");
          await subscription.done;
        });
      },
    },
    {
      name: "bigint: 64-bit integers keep their exact value both ways",
      async run() {
        await withHub(url, { bigint: true }, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name);
          await subscription.subscribed;
          const values = [9223372036854775807n, -9223372036854775808n, 9007199254740993n, 42, { big: 9007199254740993n }];
          for (const value of values) await hub.send(name, value);
          same(await take(subscription, values.length), values);
        });
      },
    },
    {
      name: "batch is the default: hello asks for it, values arrays are flattened in order",
      async run() {
        const recording = recordingWebSocket();
        await withHub(url, { WebSocket: recording.WebSocket }, async (hub) => {
          same(await bufferedThenTaken(hub, unique(), 50), numbered(50));
          same(recording.sent.find((m) => m.op === "hello")?.batch, true, "hello batch");
          const nexts = recording.received.filter((m) => m.op === "next");
          check(nexts.every((m) => Array.isArray(m.values) && !("value" in m)), "every next in the batch form");
          same(nexts.reduce((sum, m) => sum + m.values.length, 0), 50, "values in the batches");
          check(nexts.length < 50, `several values in a message: ${nexts.length} messages`);
          const seen = [];
          for await (const value of hub.subscribe({ pipeline: "sequence([1,2,3,4,5,6])" }, { prefetch: 6 })) seen.push(value);
          same(seen, [1, 2, 3, 4, 5, 6]);
        });
      },
    },
    {
      name: "batch: false keeps the plain form, for the connection or one subscription",
      async run() {
        const plain = recordingWebSocket();
        await withHub(url, { WebSocket: plain.WebSocket, batch: false }, async (hub) => {
          same(await bufferedThenTaken(hub, unique(), 20), numbered(20));
        });
        const mixed = recordingWebSocket();
        await withHub(url, { WebSocket: mixed.WebSocket }, async (hub) => {
          same(await bufferedThenTaken(hub, unique(), 20, { batch: false }), numbered(20));
          same(mixed.sent.find((m) => m.op === "subscribe")?.batch, false, "subscribe batch");
        });
        for (const recording of [plain, mixed]) {
          const nexts = recording.received.filter((m) => m.op === "next");
          same(nexts.length, 20, "one next per value");
          check(nexts.every((m) => "value" in m && !("values" in m)), "every next in the plain form");
        }
      },
    },
    {
      name: "a consumer that falls behind holds the values, not the hub's buffer (the default window)",
      async run() {
        await withHub(url, {}, async (hub) => {
          const name = unique();
          const subscription = hub.subscribe(name, { buffer: 10 });
          await subscription.subscribed;
          for (let n = 0; n < 200; n += 1) await hub.send(name, n); // 20 times the hub's buffer, nothing taken
          same(await take(subscription, 200), Array.from({ length: 200 }, (_, n) => n));
        });
      },
    },
    {
      name: "hello auth: the right token works, a wrong or missing token is unauthorized",
      async run() {
        await withHub(authUrl, { token }, async (hub) => {
          const name = unique();
          await hub.send(name, 1);
          same((await hub.list()).subjects.some((s) => s.name === name), true, "listed");
        });
        await withHub(authUrl, { token: "wrong" }, async (hub) => {
          const error = await failure(hub.list(), ErrorCode.UNAUTHORIZED);
          check(error.message.length > 0, "message");
        });
        await withHub(authUrl, {}, async (hub) => {
          await failure(hub.send(unique(), 1), ErrorCode.UNAUTHORIZED);
        });
      },
    },
    {
      name: "bad arguments fail at once with typed errors",
      async run() {
        for (const bad of ["http://127.0.0.1:1/", "not a url"]) {
          try {
            new Hub(bad);
            throw new AssertionError(`accepted ${bad}`);
          } catch (error) {
            check(error instanceof HubError && error.code === ErrorCode.INVALID_URL, `invalid_url for ${bad}: ${error}`);
          }
        }
        await withHub(url, {}, async (hub) => {
          await failure(hub.send("x", undefined), ErrorCode.INVALID_ARGUMENT);
          const subscription = hub.subscribe(unique(), { prefetch: 0 });
          for (const n of [0, -1, 1.5, "lots", null]) {
            try {
              subscription.request(n);
              throw new AssertionError(`request(${n}) accepted`);
            } catch (error) {
              check(error instanceof HubError && error.code === ErrorCode.INVALID_DEMAND, `invalid_demand for ${n}: ${error}`);
            }
          }
          try {
            hub.subscribe(unique(), { overflow: "sometimes" });
            throw new AssertionError("overflow accepted");
          } catch (error) {
            check(error.code === ErrorCode.INVALID_ARGUMENT, `${error}`);
          }
          const badName = await failure(hub.send("bad name!", 1), ErrorCode.BAD_MESSAGE);
          check(badName.message.includes("name"), badName.message);
        });
      },
    },
    {
      name: "close: live subscriptions and later calls fail with `closed`",
      async run() {
        const hub = new Hub(url);
        const subscription = hub.subscribe(unique());
        await subscription.subscribed;
        same(hub.state, "open", "state");
        check(typeof hub.session === "string", "session");
        await hub.close();
        same(hub.state, "closed", "state");
        await failure(subscription.next(), ErrorCode.CLOSED);
        await failure(hub.send("x", 1), ErrorCode.CLOSED);
        await failure(hub.subscribe("x").subscribed, ErrorCode.CLOSED);
      },
    },
  ];
}
