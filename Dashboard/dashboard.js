// The Reactive Hub dashboard: a client of the hub it is served by, over WebSocket
// with the JS client (hub.js, served beside this file). It reads the catalog
// (list), the system subjects $sys.stats, $sys.connections and $sys.events
// (which need the admin permission), tails any name and runs ad-hoc pipelines.
import { Hub, ErrorCode } from "./hub.js";

const $ = (selector) => document.querySelector(selector);
const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
let hub = null;
let rates = new Map();
let lastCatalog = null;
let tail = null;
let playground = null;

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) tr.append(cell instanceof Node ? cell : element("td", String(cell)));
  return tr;
}

function show(value) {
  return typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value);
}

function bytes(count) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let unit = 0;
  while (count >= 1024 && unit < units.length - 1) { count /= 1024; unit += 1; }
  return unit === 0 ? `${count} B` : `${count.toFixed(1)} ${units[unit]}`;
}

function setStatus(text, state) {
  const status = $("#status");
  status.textContent = text;
  status.className = state;
}

/** The hub wants a token: ask for it. */
function needToken(error) {
  setStatus(`${error.code}: ${error.message}`, "error");
  $("#login").hidden = false;
}

function connect() {
  hub?.close();
  const token = sessionStorage.getItem("hubToken") ?? undefined;
  hub = new Hub(url, { token, client: "dashboard", reconnect: { maxAttempts: Infinity } });
  hub.addEventListener("open", () => setStatus("connected", "open"));
  hub.addEventListener("reconnecting", () => setStatus("reconnecting…", "error"));
  hub.addEventListener("disconnect", (event) => {
    if (event.detail?.code === ErrorCode.UNAUTHORIZED) needToken(event.detail);
  });
  hub.connect().then(() => {
    setStatus("connected", "open");
    $("#login").hidden = true;
    follow("$sys.stats", renderStats);
    follow("$sys.connections", renderConnections);
    follow("$sys.events", renderEvent, { prefetch: 32, buffer: 200, overflow: "dropOldest" });
    refreshCatalog();
    // A link can open a tail and a pipeline: #tail=NAME&pipeline=TEXT.
    const wanted = new URLSearchParams(location.hash.slice(1));
    if (wanted.get("tail")) startTail(wanted.get("tail"));
    if (wanted.get("pipeline")) {
      $("#playground-form").elements.pipeline.value = wanted.get("pipeline");
      runPipeline(wanted.get("pipeline"));
    }
  }, (error) => {
    if (error.code === ErrorCode.UNAUTHORIZED) needToken(error);
    else setStatus(`${error.code}: ${error.message}`, "error");
  });
}

async function follow(name, render, options = { prefetch: 2, buffer: 2, overflow: "latest" }) {
  while (true) {
    try {
      for await (const value of hub.subscribe(name, options)) render(value);
      return;
    } catch (error) {
      if (error.code === ErrorCode.FORBIDDEN) {
        $("#summary").textContent = `${name}: ${error.message}`;
        return;
      }
      if (error.code === ErrorCode.CLOSED) return;
      if (error.code === ErrorCode.UNAUTHORIZED) return needToken(error);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function renderStats(stats) {
  rates = new Map((stats.names ?? []).map((entry) => [entry.name, entry]));
  if (lastCatalog) renderCatalog(lastCatalog);
  $("#summary").textContent =
    `${stats.connections} connections · ${stats.subscriptions} subscriptions · ` +
    `${stats.rates.published}/s published · ${stats.rates.delivered}/s delivered · ` +
    `queued ${bytes(stats.queuedBytes)} · loop lag ${stats.loopLagMs} ms` + (stats.draining ? " · DRAINING" : "");
}

function renderConnections(value) {
  const body = $("#connections tbody");
  body.replaceChildren(...value.connections.map((c) => row([
    c.session, c.peer ?? "-", c.client ?? "-", new Date(c.since).toLocaleTimeString(), c.subscriptions,
    bytes(c.queuedBytes), bytes(c.bytesIn), bytes(c.bytesOut),
  ])));
}

function renderEvent(event) {
  const list = $("#events");
  const { type, time, ...rest } = event;
  list.prepend(element("li", `${new Date(time).toLocaleTimeString()} ${type} ${JSON.stringify(rest)}`));
  while (list.children.length > 50) list.lastChild.remove();
}

async function refreshCatalog() {
  try {
    lastCatalog = await hub.list();
    renderCatalog(lastCatalog);
  } catch (error) {
    if (error.code === ErrorCode.UNAUTHORIZED) return needToken(error);
    if (error.code === ErrorCode.CLOSED) return;
    // Otherwise shown by the status; the next refresh tries again.
  }
  setTimeout(refreshCatalog, 2000);
}

/** The catalog's rows, with each name's rates from the latest $sys.stats. */
function renderCatalog(catalog) {
  const rows = [];
    const add = (name, type, state, subscribers) => {
      const figures = rates.get(name) ?? {};
      const cell = element("td", name, "name");
      cell.addEventListener("click", () => startTail(name));
      rows.push(row([cell, type, element("td", state, `state-${state}`), subscribers,
        figures.publishedRate ?? 0, figures.deliveredRate ?? 0, figures.dropped ?? 0]));
    };
    for (const s of catalog.subjects) add(s.name, s.kind === "currentValue" ? "subject (current)" : "subject", s.state ?? "open", s.subscribers);
    for (const p of catalog.pipelines) add(p.name, "pipeline", "-", p.subscribers);
    for (const t of catalog.triggers) add(t.name, "trigger", "-", t.subscribers ?? 0);
    $("#catalog tbody").replaceChildren(...rows);
}

async function startTail(name) {
  tail?.cancel();
  $("#tail-form").elements.name.value = name;
  const list = $("#tail");
  list.replaceChildren();
  $("#tail-status").textContent = `tailing ${name}…`;
  const subscription = hub.subscribe(name, { prefetch: 16, buffer: 100, overflow: "dropOldest" });
  tail = subscription;
  try {
    for await (const value of subscription) {
      list.prepend(element("li", show(value)));
      while (list.children.length > 50) list.lastChild.remove();
    }
    if (tail === subscription) $("#tail-status").textContent = `${name} completed`;
  } catch (error) {
    if (tail === subscription) $("#tail-status").textContent = `${name}: ${error.code}: ${error.message}`;
  }
}

/** Shows a pipeline error; with a line and column, the line with a caret under the column. */
function showPipelineError(source, error) {
  const box = $("#playground-error");
  box.hidden = false;
  box.querySelector(".message").textContent = `${error.code}: ${error.message}`;
  const pre = box.querySelector(".source");
  pre.replaceChildren();
  const { line, column } = error.data ?? {};
  if (Number.isInteger(line) && Number.isInteger(column)) {
    const text = source.split("\n")[line - 1] ?? "";
    pre.append(element("span", text, "line"), "\n", " ".repeat(Math.max(0, column - 1)), element("span", "^", "caret"));
    pre.hidden = false;
  } else {
    pre.hidden = true;
  }
}

async function runPipeline(source) {
  playground?.cancel();
  $("#playground-error").hidden = true;
  const list = $("#playground-values");
  list.replaceChildren();
  $("#playground-status").textContent = "running…";
  const subscription = hub.subscribe({ pipeline: source }, { prefetch: 16, buffer: 100, overflow: "dropOldest" });
  playground = subscription;
  try {
    for await (const value of subscription) {
      list.append(element("li", show(value)));
      while (list.children.length > 100) list.firstChild.remove();
    }
    if (playground === subscription) $("#playground-status").textContent = `completed after ${list.children.length} values`;
  } catch (error) {
    if (playground !== subscription) return;
    $("#playground-status").textContent = "";
    showPipelineError(source, error);
  }
}

$("#login").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("hubToken", event.target.elements.token.value);
  connect();
});
$("#tail-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = event.target.elements.name.value.trim();
  if (name) startTail(name);
});
$("#playground-form").addEventListener("submit", (event) => {
  event.preventDefault();
  runPipeline(event.target.elements.pipeline.value);
});
$("#playground-stop").addEventListener("click", () => {
  playground?.cancel();
  playground = null;
  $("#playground-status").textContent = "stopped";
});

connect();
