// Runs the Protocol/conformance vectors through the JS client's own API, in
// Node and in a browser.
//
// A vector scripts raw protocol messages; here each client message becomes the
// API call that sends it (subscribe with manual demand, request, cancel, send,
// complete, fail, trigger, list, hello as Hub options), and what the API
// reports becomes the server message a vector expects: a subscription's
// confirmation, values, completion and failure, a call's resolution or
// rejection (under the vector's own ack number). The expectations are then
// matched as Protocol/conformance/run.py matches messages, with one difference:
// the API orders what each source reports (a subscription's values and end;
// its confirmation; one call's outcome) but not one source against another (a
// call's promise and a subscription's value arriving in one network read settle
// in microtask order), so an expectation takes the first unmatched event of its
// own source, and `expectNone` requires that none is left. A vector that needs
// something the API cannot express (raw or binary text, invalid fields, a
// duplicate live id, closes, subprotocol choices) does not apply and is skipped
// with the reason.

import { Hub, parseExactJSON } from "../hub.js";

const MAX_ID = Number.MAX_SAFE_INTEGER;
const OVERFLOW = new Set(["error", "dropOldest", "dropNewest", "latest"]);
const EXPECTED_OPS = new Set(["subscribed", "next", "complete", "error", "ack", "catalog"]);
const FIELDS = {
  subscribe: ["op", "id", "to", "pipeline", "demand", "buffer", "overflow", "batch", "since"],
  request: ["op", "id", "n"],
  cancel: ["op", "id"],
  send: ["op", "to", "value", "ack"],
  complete: ["op", "to", "ack"],
  fail: ["op", "to", "error", "ack"],
  trigger: ["op", "name", "key", "ack"],
  list: ["op", "ack"],
  delete: ["op", "name", "ack"],
  hello: ["op", "token", "client", "batch"],
};

export class Mismatch extends Error {}

/** Parses a vector file's text (exact 64-bit integers as BigInts). */
export function parseVector(text) {
  return parseExactJSON(text);
}

function substitute(node, uid) {
  if (typeof node === "string") return node.replaceAll("{{uid}}", uid);
  if (Array.isArray(node)) return node.map((x) => substitute(x, uid));
  if (node && typeof node === "object") {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [substitute(k, uid), substitute(v, uid)]));
  }
  return node;
}

const isInteger = (v) => typeof v === "bigint" || Number.isInteger(v);
const isAck = (v) => isInteger(v) && Math.abs(Number(v)) <= MAX_ID;

/** Why `vector` cannot run through the API, or null when it can. */
export function inapplicable(vector) {
  const started = new Set();
  const live = new Map(); // conn -> Set of vector ids subscribed and not yet seen ending
  const known = new Map(); // conn -> Set of vector ids ever subscribed
  for (const [index, step] of vector.steps.entries()) {
    const where = `step ${index + 1}`;
    const conn = step.conn ?? "a";
    const kind = Object.keys(step).find((k) => k !== "conn" && k !== "field" && k !== "bytes");
    const ids = live.get(conn) ?? new Set();
    live.set(conn, ids);
    const held = known.get(conn) ?? new Set();
    known.set(conn, held);
    if (kind === "send" || kind === "sendPadded") {
      const message = kind === "send" ? step.send : { ...step.sendPadded, [step.field ?? "value"]: "" };
      const reason = unsupportedMessage(message, ids, held, started.has(conn));
      if (reason) return `${where}: ${reason}`;
      if (message.op === "subscribe") {
        ids.add(message.id);
        held.add(message.id);
      }
    } else if (kind === "expect" || kind === "expectUnordered") {
      for (const pattern of kind === "expect" ? [step.expect] : step.expectUnordered) {
        if (!EXPECTED_OPS.has(pattern.op)) return `${where}: the API does not surface a server '${pattern.op}'`;
        if (pattern.op === "next" && "values" in pattern && pattern.values !== "$absent") {
          return `${where}: the API flattens batches`;
        }
        if (pattern.op === "subscribed" && pattern.recovered === false && "offset" in pattern && pattern.offset !== "$absent") {
          return `${where}: the API fails a since the hub cannot recover (resume_failed) instead of going on live`;
        }
        if ((pattern.op === "complete" || pattern.op === "error") && pattern.id !== undefined) ids.delete(pattern.id);
      }
    } else if (kind !== "expectNone" && kind !== "sleep") {
      return `${where}: '${kind}' is below the API`;
    }
    started.add(conn);
  }
  return null;
}

function unsupportedMessage(message, liveIds, heldIds, started) {
  const allowed = FIELDS[message.op];
  if (!allowed) return `op '${message.op}' is not in the API`;
  const extra = Object.keys(message).filter((k) => !allowed.includes(k));
  if (extra.length) return `fields the API does not send: ${extra.join(", ")}`;
  if ("ack" in message && !isAck(message.ack)) return "an ack that is not an integer";
  switch (message.op) {
    case "hello":
      return started ? "hello after other messages" : null;
    case "subscribe": {
      const { id, to, pipeline, demand, buffer, overflow, batch } = message;
      if (!isInteger(id) || id < 1 || id > MAX_ID) return "an id the API would not choose";
      if (liveIds.has(id)) return "a live id subscribed again";
      if ((typeof to === "string") === (typeof pipeline === "string") || (to !== undefined && typeof to !== "string")) {
        return "not exactly one of to/pipeline";
      }
      if (demand !== undefined && demand !== "unlimited" && !(isInteger(demand) && demand >= 0)) return "an invalid demand";
      if (buffer !== undefined && !(isInteger(buffer) && buffer >= 1)) return "an invalid buffer";
      if (overflow !== undefined && !OVERFLOW.has(overflow)) return "an invalid overflow";
      if (batch !== undefined && typeof batch !== "boolean") return "an invalid batch";
      if (message.since !== undefined && !validSince(message.since)) return "an invalid since (the API refuses it locally)";
      return null;
    }
    case "request":
      // A request on an ended subscription is the API's no-op.
      if (!heldIds.has(message.id)) return "a request for an id the API does not hold";
      if (message.n !== "unlimited" && !(isInteger(message.n) && message.n >= 1)) return "an invalid n (the API refuses it locally)";
      return null;
    case "cancel":
      return heldIds.has(message.id) ? null : "a cancel for an id the API does not hold";
    case "send":
      return typeof message.to === "string" && "value" in message ? null : "a send the API cannot express";
    case "complete":
      return typeof message.to === "string" ? null : "a complete without a name";
    case "fail":
      return typeof message.to === "string" && "error" in message ? null : "a fail the API cannot express";
    case "trigger":
      return typeof message.name === "string" ? null : "a trigger without a name";
    case "list":
      return "ack" in message ? null : "a list without ack";
    case "delete":
      return typeof message.name === "string" ? null : "a delete without a name";
    default:
      return null;
  }
}

function validSince(since) {
  const count = (n) => isInteger(n) && n >= 0 && n <= MAX_ID;
  if (!since || typeof since !== "object" || Array.isArray(since)) return false;
  const keys = Object.keys(since);
  if (keys.includes("offset")) {
    return !keys.includes("last") && count(since.offset) && (since.epoch === undefined || typeof since.epoch === "string");
  }
  return keys.includes("last") && count(since.last);
}

// ---- Matching (as run.py) ----

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "bigint") return "integer";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

const TYPES = {
  string: (v) => typeof v === "string",
  integer: (v) => typeOf(v) === "integer",
  number: (v) => typeof v === "number" || typeof v === "bigint",
  object: (v) => typeOf(v) === "object",
  array: Array.isArray,
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
};

const text = (v) => JSON.stringify(v, (k, x) => (typeof x === "bigint" ? `${x}n` : x));

function equal(pattern, value, path) {
  if (pattern === "$any") return;
  if (pattern && typeof pattern === "object" && !Array.isArray(pattern)) {
    const keys = Object.keys(pattern);
    if (keys.length === 1 && keys[0] === "$contains") {
      if (!Array.isArray(value)) throw new Mismatch(`${path}: expected an array, got ${text(value)}`);
      for (const item of pattern.$contains) {
        const found = value.some((element) => {
          try {
            if (typeOf(item) === "object" && typeOf(element) === "object") match(item, element);
            else equal(item, element, path);
            return true;
          } catch (error) {
            if (error instanceof Mismatch) return false;
            throw error;
          }
        });
        if (!found) throw new Mismatch(`${path}: no element matches ${text(item)} in ${text(value)}`);
      }
      return;
    }
    if (keys.length === 1 && keys[0] === "$type") {
      if (!TYPES[pattern.$type](value)) throw new Mismatch(`${path}: expected a ${pattern.$type}, got ${text(value)}`);
      return;
    }
  }
  const kind = typeOf(pattern);
  const numeric = (k) => k === "integer" || k === "number";
  if (numeric(kind) && numeric(typeOf(value))) {
    // eslint-disable-next-line eqeqeq
    if (pattern != value) throw new Mismatch(`${path}: expected ${text(pattern)}, got ${text(value)}`);
    return;
  }
  if (kind !== typeOf(value)) throw new Mismatch(`${path}: expected ${text(pattern)}, got ${text(value)}`);
  if (kind === "object") {
    const a = Object.keys(pattern).sort();
    const b = Object.keys(value).sort();
    if (text(a) !== text(b)) throw new Mismatch(`${path}: expected ${text(pattern)}, got ${text(value)}`);
    for (const key of a) equal(pattern[key], value[key], `${path}.${key}`);
    return;
  }
  if (kind === "array") {
    if (pattern.length !== value.length) throw new Mismatch(`${path}: expected ${text(pattern)}, got ${text(value)}`);
    pattern.forEach((p, i) => equal(p, value[i], `${path}[${i}]`));
    return;
  }
  if (pattern !== value) throw new Mismatch(`${path}: expected ${text(pattern)}, got ${text(value)}`);
}

function match(pattern, message) {
  for (const [key, expected] of Object.entries(pattern)) {
    if (expected === "$absent") {
      if (key in message) throw new Mismatch(`${key}: expected absent, got ${text(message[key])}`);
      continue;
    }
    if (!(key in message)) throw new Mismatch(`${key}: missing in ${text(message)}`);
    equal(expected, message[key], key);
  }
}

// ---- Running ----

/** The source of an event or of a pattern: one subscription, one acked call, or the calls without ack. */
function sourceOf(message) {
  const present = (key) => key in message && message[key] !== "$absent";
  if (message.op === "ack" || message.op === "catalog" || (message.op === "error" && present("ack"))) return `ack ${text(message.ack)}`;
  if (message.op === "error" && !present("id")) return "calls";
  if (message.op === "subscribed") return `confirmation ${text(message.id)}`;
  return `subscription ${text(message.id)}`;
}

/** What the API reported on one connection, as the server messages they stand for. */
class EventLog {
  events = [];
  wake = null;

  push(event) {
    this.events.push(event);
    this.wake?.();
  }

  /** Waits (at most `timeout` ms) for an event of one of `sources`, removes and returns the first. */
  async take(sources, timeout) {
    const deadline = Date.now() + timeout;
    for (;;) {
      const index = this.events.findIndex((event) => sources.includes(sourceOf(event)));
      if (index >= 0) return this.events.splice(index, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) {
        const other = this.events.length ? `; other events: ${text(this.events)}` : "";
        throw new Mismatch(`nothing from ${sources.join(" or ")} within ${timeout} ms${other}`);
      }
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  async none(ms) {
    await new Promise((resolve) => setTimeout(resolve, ms));
    if (this.events.length) throw new Mismatch(`expected nothing, got ${text(this.events[0])}`);
  }
}

function errorEvent(error, extra) {
  const event = { op: "error", code: error.code, message: error.message, ...extra };
  if (error.data !== undefined) event.data = error.data;
  return event;
}

/** A vector's since with plain numbers (vectors parse integers as BigInts). */
function exactSince(since) {
  const copy = {};
  for (const [key, value] of Object.entries(since)) copy[key] = typeof value === "bigint" ? Number(value) : value;
  return copy;
}

/** Runs one applicable vector; throws Mismatch when the API's behaviour differs. */
export async function runVector(vectorTemplate, { url, token, timeout = 10000 }) {
  const vector = substitute(vectorTemplate, Math.random().toString(36).slice(2, 14));
  const conns = new Map();

  const connFor = (step) => {
    const name = step.conn ?? "a";
    if (!conns.has(name)) {
      const hello = step.send?.op === "hello" ? step.send : {};
      const hub = new Hub(url, {
        bigint: true,
        reconnect: false,
        token: hello.token ?? token,
        client: hello.client,
        batch: hello.batch === true, // the vectors speak the plain form unless they ask for batch
        requestTimeout: timeout,
        connectTimeout: timeout,
      });
      conns.set(name, { hub, log: new EventLog(), subs: new Map() });
    }
    return conns.get(name);
  };

  const call = (conn, promise, ack, catalog = false) => {
    const extra = ack === undefined ? {} : { ack };
    promise.then(
      (result) => {
        if (ack !== undefined) conn.log.push(catalog ? { op: "catalog", ack, ...result } : { op: "ack", ack });
      },
      (error) => conn.log.push(errorEvent(error, extra)),
    );
  };

  const subscribe = (conn, message) => {
    const id = message.id;
    const target = message.to !== undefined ? message.to : { pipeline: message.pipeline };
    const subscription = conn.hub.subscribe(target, {
      prefetch: 0,
      demand: message.demand ?? 0,
      buffer: message.buffer,
      overflow: message.overflow,
      batch: message.batch,
      since: message.since === undefined ? undefined : exactSince(message.since),
    });
    const entry = { subscription, cancelled: false };
    conn.subs.set(id, entry);
    subscription.subscribed.then(
      (kind) => {
        // What the hub's `subscribed` said, as the subscription's state holds it.
        const event = { op: "subscribed", id, kind };
        if (subscription.epoch !== null) {
          event.epoch = subscription.epoch;
          event.offset = subscription.startOffset;
        }
        if (subscription.recovered !== null) event.recovered = subscription.recovered;
        conn.log.push(event);
      },
      () => {},
    );
    (async () => {
      try {
        for (;;) {
          const { value, done } = await subscription.next();
          if (done) {
            if (!entry.cancelled) conn.log.push({ op: "complete", id });
            return;
          }
          const event = { op: "next", id, value };
          if (subscription.lastOffset !== null) event.offset = subscription.lastOffset;
          conn.log.push(event);
        }
      } catch (error) {
        conn.log.push(errorEvent(error, { id }));
      }
    })();
  };

  const send = (conn, message) => {
    switch (message.op) {
      case "hello":
        return; // given to the Hub when the connection was made
      case "subscribe":
        return subscribe(conn, message);
      case "request":
        return conn.subs.get(message.id).subscription.request(message.n);
      case "cancel": {
        const entry = conn.subs.get(message.id);
        entry.cancelled = true;
        return entry.subscription.cancel();
      }
      case "send":
        return call(conn, conn.hub.send(message.to, message.value), message.ack);
      case "complete":
        return call(conn, conn.hub.complete(message.to), message.ack);
      case "fail":
        return call(conn, conn.hub.fail(message.to, message.error), message.ack);
      case "trigger":
        return call(conn, "key" in message ? conn.hub.trigger(message.name, message.key) : conn.hub.trigger(message.name), message.ack);
      case "list":
        return call(conn, conn.hub.list(), message.ack, true);
      case "delete":
        return call(conn, conn.hub.delete(message.name), message.ack);
      default:
        throw new Mismatch(`unexpected op ${message.op}`);
    }
  };

  try {
    for (const [index, step] of vector.steps.entries()) {
      try {
        const conn = connFor(step);
        if (step.send) {
          send(conn, step.send);
        } else if (step.sendPadded) {
          send(conn, { ...step.sendPadded, [step.field ?? "value"]: "x".repeat(step.bytes) });
        } else if (step.expect) {
          match(step.expect, await conn.log.take([sourceOf(step.expect)], timeout));
        } else if (step.expectUnordered) {
          const pending = [...step.expectUnordered];
          while (pending.length) {
            const event = await conn.log.take(pending.map(sourceOf), timeout);
            const i = pending.findIndex((pattern) => {
              try {
                match(pattern, event);
                return true;
              } catch (error) {
                if (error instanceof Mismatch) return false;
                throw error;
              }
            });
            if (i < 0) throw new Mismatch(`unexpected ${text(event)}; still expecting ${text(pending)}`);
            pending.splice(i, 1);
          }
        } else if (step.expectNone !== undefined) {
          await conn.log.none(step.expectNone);
        } else if (step.sleep !== undefined) {
          await new Promise((resolve) => setTimeout(resolve, step.sleep));
        }
      } catch (error) {
        if (error instanceof Mismatch) throw new Mismatch(`step ${index + 1}: ${error.message}`);
        throw error;
      }
    }
  } finally {
    await Promise.all([...conns.values()].map((conn) => conn.hub.close()));
  }
}

/**
 * Runs `vectors` ({name, vector}) and returns one {name, status: "pass"|"fail"|"skip", detail}
 * per vector.
 */
export async function runVectors(vectors, options) {
  const results = [];
  for (const { name, vector } of vectors) {
    const reason = inapplicable(vector);
    if (reason) {
      results.push({ name, status: "skip", detail: reason });
      continue;
    }
    try {
      await runVector(vector, options);
      results.push({ name, status: "pass" });
    } catch (error) {
      results.push({ name, status: "fail", detail: error instanceof Mismatch ? error.message : `${error?.stack ?? error}` });
    }
  }
  return results;
}
