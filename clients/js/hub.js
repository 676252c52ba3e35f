// Reactive Hub client for browsers and Node (protocol v1, Protocol/PROTOCOL.md).
//
// One ES module, no dependencies: it needs a global WebSocket (every browser;
// Node >= 22, or Node 20/21 with --experimental-websocket), ReadableStream and
// EventTarget. See README.md beside this file.

/** The WebSocket subprotocol of protocol v1. */
export const SUBPROTOCOL = "hub.v1";

/**
 * Every error code a {@link HubError} can carry: the server's protocol codes
 * (PROTOCOL.md §6) and the client's own.
 */
export const ErrorCode = Object.freeze({
  // The server's (PROTOCOL.md §6).
  BAD_MESSAGE: "bad_message",
  UNKNOWN_OP: "unknown_op",
  NOT_FOUND: "not_found",
  DUPLICATE_ID: "duplicate_id",
  INVALID_DEMAND: "invalid_demand",
  PIPELINE_ERROR: "pipeline_error",
  FAILED: "failed",
  OVERFLOW: "overflow",
  FORBIDDEN: "forbidden",
  UNAUTHORIZED: "unauthorized",
  LIMIT_EXCEEDED: "limit_exceeded",
  COMPLETED: "completed",
  INVALID_VALUE: "invalid_value",
  STORAGE_UNAVAILABLE: "storage_unavailable",
  SHUTTING_DOWN: "shutting_down",
  INTERNAL: "internal",
  // The client's (the same names as the Swift client's HubClientError codes).
  INVALID_URL: "invalid_url",
  INVALID_ARGUMENT: "invalid_argument",
  CONNECTION_FAILED: "connection_failed",
  TIMEOUT: "timeout",
  PROTOCOL_ERROR: "protocol_error",
  DISCONNECTED: "disconnected",
  CLOSED: "closed",
  CANCELLED: "cancelled",
  /** A subscription to a subject with history could not go on without a gap (PROTOCOL.md §10). */
  RESUME_FAILED: "resume_failed",
});

/** A failure with a stable machine-readable `code` (one of {@link ErrorCode}). */
export class HubError extends Error {
  /**
   * @param {string} code a protocol code or one of the client's codes
   * @param {string} message what happened, naming the offending part
   * @param {{data?: unknown, closeCode?: number, fromServer?: boolean}} [details]
   */
  constructor(code, message, details = {}) {
    super(message);
    this.name = "HubError";
    /** The stable code. */
    this.code = code;
    /** The server's `data` (a pipeline_error's position, a failed stream's error value). */
    this.data = details.data;
    /** The WebSocket close code of a `disconnected` error, when the server sent one. */
    this.closeCode = details.closeCode;
    /** Whether the server reported this error (an `error` message). */
    this.fromServer = details.fromServer === true;
  }

  /** `code: message`. */
  toString() {
    return `${this.code}: ${this.message}`;
  }
}

/** An event of a {@link Hub}: `detail` carries its data (CustomEvent is not global in every Node). */
export class HubEvent extends Event {
  /**
   * @param {string} type
   * @param {unknown} detail
   */
  constructor(type, detail) {
    super(type);
    this.detail = detail;
  }
}

const OVERFLOW_POLICIES = new Set(["error", "dropOldest", "dropNewest", "latest"]);
const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1: demand at or past it is unlimited

const DEFAULT_RECONNECT = Object.freeze({
  initialDelay: 100,
  multiplier: 2,
  maxDelay: 5000,
  maxAttempts: Infinity,
  jitter: 0.2,
});

/**
 * A connection to a hub. Calls made before it is open wait for it (the first
 * call connects); after an established connection is lost, it reconnects with
 * exponential back-off. Given several URLs (the nodes of a cluster), the first
 * connection tries each in turn and a reconnection goes to the next. Events:
 * `open` (detail: the session id), `disconnect` (detail: the HubError),
 * `reconnecting` (detail: {attempt, delay}), `error` (detail: a
 * connection-level HubError the server reported).
 */
export class Hub extends EventTarget {
  #core;

  /**
   * @param {string | string[]} url `ws://host:port/path` or `wss://…`, or several
   *   (the nodes of a cluster, tried in turn)
   * @param {object} [options] see hub.d.ts (HubOptions)
   */
  constructor(url = "ws://127.0.0.1:7420/", options = {}) {
    super();
    this.#core = new Core(this, checkURLs(url), options);
  }

  /** The URL this hub connects to (the one in use now, of `urls`). */
  get url() {
    return this.#core.url;
  }

  /** Every URL this hub was given, in the order they are tried. */
  get urls() {
    return [...this.#core.urls];
  }

  /** `idle`, `connecting`, `open`, `reconnecting` or `closed`. */
  get state() {
    return this.#core.state;
  }

  /** The session id of the open connection (from `welcome`), else null. */
  get session() {
    return this.#core.session;
  }

  /** Connects now (calls connect by themselves); resolves once welcomed. */
  connect() {
    return this.#core.connect();
  }

  /** Sends `value` to the subject `to`; resolves on the hub's ack. */
  send(to, value) {
    if (value === undefined) return rejected(invalid("send needs a value (undefined is not JSON; use null)"));
    return this.#core.call((ack) => ({ op: "send", to, value, ack })).then(nothing);
  }

  /** Completes the subject `to`; resolves on the hub's ack. */
  complete(to) {
    return this.#core.call((ack) => ({ op: "complete", to, ack })).then(nothing);
  }

  /**
   * Deletes the subject `name` (its subscribers complete; a completed or failed subject
   * can be used again; a declared one starts over); resolves on the hub's ack.
   */
  delete(name) {
    return this.#core.call((ack) => ({ op: "delete", name, ack })).then(nothing);
  }

  /**
   * The current value of `key` (a string, or an integer: the same key as its decimal
   * text) in the table subject `table`, or `undefined` when the table has no such key
   * (a table never holds `null`: it deletes the key). A name that is not a table subject
   * rejects with `not_found`.
   */
  get(table, key) {
    if (typeof key !== "string" && !Number.isInteger(key)) {
      return rejected(invalid("get needs a key that is a string or an integer"));
    }
    return this.#core
      .call((ack) => ({ op: "get", name: table, key, ack }))
      .then((answer) => (answer.found ? answer.value : undefined));
  }

  /** Fails the subject `to` with `error` (any JSON); resolves on the hub's ack. */
  fail(to, error) {
    if (error === undefined) return rejected(invalid("fail needs an error value (undefined is not JSON; use null)"));
    return this.#core.call((ack) => ({ op: "fail", to, error, ack })).then(nothing);
  }

  /** Activates the trigger `name`, with `key` when given; resolves on the hub's ack. */
  trigger(name, key) {
    return this.#core
      .call((ack) => (key === undefined ? { op: "trigger", name, ack } : { op: "trigger", name, key, ack }))
      .then(nothing);
  }

  /**
   * The hub's whole catalog: `{subjects, pipelines, triggers, connections?}`. A large
   * catalog comes in pages (`listPage`): this asks for each in turn and joins them.
   */
  async list() {
    const catalog = await this.listPage();
    let next = catalog.next;
    while (next !== undefined) {
      const page = await this.listPage({ after: next });
      if (page.next !== undefined && !(cursorOrder(next, page.next) < 0)) {
        throw new HubError(ErrorCode.PROTOCOL_ERROR, `the hub's catalog went back from ${next} to ${page.next}`);
      }
      catalog.subjects.push(...page.subjects);
      catalog.pipelines.push(...page.pipelines);
      catalog.triggers.push(...page.triggers);
      if (page.connections !== undefined) catalog.connections = page.connections;
      next = page.next;
    }
    delete catalog.next;
    return catalog;
  }

  /**
   * One page of the hub's catalog: the entries after `after` (the `next` of the
   * previous page; from the start when absent), at most `limit` (1–10,000; the hub's
   * page size when absent). `next` is where the following page starts, absent on the last.
   */
  listPage({ after, limit } = {}) {
    if (after !== undefined && typeof after !== "string") {
      return rejected(invalid("listPage: after must be the next of an earlier page (a string)"));
    }
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 10000)) {
      return rejected(invalid(`listPage: limit must be an integer from 1 to 10000, got ${limit}`));
    }
    return this.#core
      .call((ack) => ({ op: "list", ack, ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) }))
      .then(({ subjects, pipelines, triggers, connections, next }) => ({
        subjects,
        pipelines,
        triggers,
        ...(connections === undefined ? {} : { connections }),
        ...(next === undefined ? {} : { next }),
      }));
  }

  /**
   * Subscribes to a subject, named pipeline or trigger (`target` a name) or to
   * pipeline text (`target` `{pipeline: "…"}`).
   * @returns {Subscription}
   */
  subscribe(target, options = {}) {
    return new Subscription(this.#core, target, options);
  }

  /** Closes the connection (close 1000); every live call and subscription fails with `closed`. */
  close() {
    return this.#core.close();
  }
}

/**
 * Values a subscription keeps requested ahead of its consumer by default. The hub
 * sends no more than that, so it bounds what waits in the client's memory; it lets
 * a consumer that falls behind for a while take a subject's values off the hub
 * (whose buffer holds 1,000 by default) instead of overflowing there, and covers
 * the round trip of a `request` at high rates (half a window is granted at a time).
 */
export const DEFAULT_PREFETCH = 65536;

/**
 * One remote subscription. Consume it either as an async iterator
 * (`for await`), whose `next()` is demand, or through `readable`, a
 * ReadableStream whose `pull()` is demand (not both: they share the values).
 * With `prefetch` N > 0 (default DEFAULT_PREFETCH, 65,536) at most N values are
 * requested ahead of the consumer, half a window at a time as it takes them; with `prefetch: 0` nothing is requested but what
 * `request(n)` grants.
 */
export class Subscription {
  #core;
  #target;
  #prefetch;
  #initialDemand; // sent with `subscribe`
  #buffer;
  #overflow;
  #batch;
  #since = null; // where the next subscribe starts: the option, then after the last delivered value
  #resuming = false; // the subscribe on the wire resumes after a lost connection
  #waitToken = null;
  #wire = false; // the subscribe went out and the subscription is live on the wire
  #queue = [];
  #head = 0;
  #waiters = [];
  #terminal = null; // {error} or {error: null}
  #terminalReported = false;
  #consumedSinceGrant = 0;
  #readable = null;
  #resolveSubscribed;
  #rejectSubscribed;
  #resolveDone;
  #rejectDone;

  /** @internal */
  constructor(core, target, options) {
    this.#core = core;
    if (typeof target === "string") {
      this.#target = { to: target };
    } else if (target && typeof target === "object" && typeof target.pipeline === "string" && target.to === undefined) {
      this.#target = { pipeline: target.pipeline };
    } else if (target && typeof target === "object" && typeof target.to === "string" && target.pipeline === undefined) {
      this.#target = { to: target.to };
    } else {
      throw invalid("subscribe needs a name or {pipeline: text}");
    }
    const prefetch = options.prefetch ?? DEFAULT_PREFETCH;
    if (!Number.isInteger(prefetch) || prefetch < 0) throw invalid(`prefetch must be an integer >= 0, got ${prefetch}`);
    this.#prefetch = prefetch;
    if (options.demand !== undefined && prefetch !== 0) throw invalid("demand is for prefetch: 0 (manual demand)");
    this.#initialDemand = prefetch > 0 ? prefetch : demandValue(options.demand ?? 0, true);
    if (options.buffer !== undefined && !(Number.isInteger(options.buffer) && options.buffer >= 1)) {
      throw invalid(`buffer must be an integer >= 1, got ${options.buffer}`);
    }
    if (options.overflow !== undefined && !OVERFLOW_POLICIES.has(options.overflow)) {
      throw invalid(`overflow must be one of ${[...OVERFLOW_POLICIES].join(", ")}, got ${options.overflow}`);
    }
    this.#buffer = options.buffer;
    this.#overflow = options.overflow;
    this.#batch = options.batch;
    if (options.since !== undefined) {
      if (this.#target.pipeline !== undefined) throw invalid("since needs a subject name (a pipeline keeps no history)");
      this.#since = checkSince(options.since);
    }
    /** The wire id of the live subscription (null until it is sent). */
    this.id = null;
    /** The kind the hub answered: `subject`, `pipeline` or `trigger` (null until then). */
    this.kind = null;
    /** Values the hub delivered to this subscription (consumed or not). */
    this.delivered = 0;
    /** Demand granted so far (Infinity: unlimited). */
    this.requested = 0;
    /**
     * The offset in its subject's history of the last value `next()` (or `readable`)
     * handed out: where this consumer stands (null for a name without history, or
     * before the first value).
     */
    this.lastOffset = null;
    /** The epoch of the subject's history (null for a name without history). */
    this.epoch = null;
    /** The subject's latest offset when the hub confirmed the subscription (null without history). */
    this.startOffset = null;
    /** For a `since`: whether the hub still held what it asked for (null without since). */
    this.recovered = null;
    /** Resolves with the kind once the hub confirms the subscription; rejects if it fails first. */
    this.subscribed = handled(
      new Promise((resolve, reject) => {
        this.#resolveSubscribed = resolve;
        this.#rejectSubscribed = reject;
      }),
    );
    /** Resolves when the subscription completes or is cancelled; rejects with its failure. */
    this.done = handled(
      new Promise((resolve, reject) => {
        this.#resolveDone = resolve;
        this.#rejectDone = reject;
      }),
    );
    this.#start(null);
  }

  /** `{to}` or `{pipeline}`. */
  get target() {
    return { ...this.#target };
  }

  /** Whether the subscription ended (completed, failed or cancelled). */
  get ended() {
    return this.#terminal !== null;
  }

  /** Grants `n` more values (an integer >= 1, or "unlimited"/Infinity). */
  request(n) {
    const amount = demandValue(n, false);
    if (this.#terminal) return;
    this.#grant(amount);
  }

  /** Cancels the subscription: nothing more arrives; a waiting `next()` returns done. */
  cancel() {
    if (this.#terminal) return;
    if (this.#waitToken !== null) this.#core.cancelWaiting(this.#waitToken);
    this.#waitToken = null;
    if (this.#wire) this.#core.cancelSubscription(this);
    this.#wire = false;
    this.#queue = [];
    this.#head = 0;
    this.#end({ error: null, cancelled: true });
  }

  /** The next value; `{done: true}` at the end; throws the subscription's failure once. */
  next() {
    if (this.#head < this.#queue.length) return Promise.resolve(this.#consume());
    if (this.#terminal) return this.#terminalResult();
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /** Cancels (a `for await` loop that breaks calls this). */
  return() {
    this.cancel();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** A ReadableStream of the values whose `pull()` is demand; cancelling it cancels the subscription. */
  get readable() {
    if (!this.#readable) {
      this.#readable = new ReadableStream(
        {
          pull: async (controller) => {
            const result = await this.next();
            if (result.done) controller.close();
            else controller.enqueue(result.value);
          },
          cancel: () => this.cancel(),
        },
        { highWaterMark: 0 },
      );
    }
    return this.#readable;
  }

  // ---- Internals (called by Core) ----

  #start(resume) {
    this.#waitToken = this.#core.withConnection((error, socket) => {
      this.#waitToken = null;
      if (this.#terminal) return;
      if (error) {
        this.#end({ error });
        return;
      }
      // A resumed subscription asks for the demand still unmet, since the last value it delivered.
      const demand = resume ? this.#outstanding() : this.#initialDemand;
      const fields = { ...this.#target };
      if (this.#since) fields.since = { ...this.#since };
      const message = this.#core.register(this, fields, demand, {
        buffer: this.#buffer,
        overflow: this.#overflow,
        batch: this.#batch,
      });
      if (!resume) this.requested = demand === "unlimited" ? Infinity : demand;
      this.#wire = true;
      this.#core.sendOn(socket, message);
    });
  }

  /** The demand granted and not yet delivered. */
  #outstanding() {
    if (this.requested === Infinity) return "unlimited";
    return Math.max(0, this.requested - this.delivered);
  }

  /**
   * @internal Whether this subscription resumes on a new connection: it subscribes
   * to a subject with history (the hub sent an epoch), so the next `subscribe` can
   * start after the last value it delivered.
   */
  resumePlan() {
    if (this.#terminal || this.epoch === null || this.#since === null) return null;
    return { since: this.#since };
  }

  /**
   * @internal The connection was lost: a subscription to a subject with history
   * resumes on the next connection (when the hub reconnects), others fail.
   */
  lost(error, reconnecting = true) {
    this.#wire = false;
    const plan = reconnecting ? this.resumePlan() : null;
    if (plan) {
      this.#resuming = true;
      this.#start(plan);
    } else if (reconnecting && error.code === ErrorCode.DISCONNECTED && this.epoch === null) {
      this.#end({
        error: new HubError(error.code, `${error.message} (the subscription cannot resume: it keeps no history)`, {
          closeCode: error.closeCode,
        }),
      });
    } else {
      this.#end({ error });
    }
  }

  /** @internal The hub's `subscribed`. */
  confirmed(message) {
    if (typeof message.epoch === "string") {
      const asked = this.#since;
      if (message.recovered === false && (this.#resuming || asked !== null)) {
        // What followed the position asked for is gone: going on would hide a gap.
        const where = asked?.offset !== undefined ? `offset ${asked.offset}` : `the last ${asked?.last} values`;
        this.#core.cancelSubscription(this);
        this.#wire = false;
        this.#end({
          error: new HubError(
            ErrorCode.RESUME_FAILED,
            `the hub no longer holds the values after ${where} of ${this.#target.to} ` +
              `(epoch now ${message.epoch}, latest offset ${message.offset}): values were missed`,
            { data: asked },
          ),
        });
        return;
      }
      this.epoch = message.epoch;
      if (this.startOffset === null) this.startOffset = message.offset;
      if (asked?.offset !== undefined && message.recovered === true) this.#since = { offset: asked.offset, epoch: message.epoch };
      else if (asked?.last !== undefined && message.recovered === true) this.#since = asked;
      else this.#since = { offset: message.offset, epoch: message.epoch };
    } else {
      this.epoch = null;
      this.#since = null;
    }
    if (message.recovered !== undefined && !this.#resuming) this.recovered = message.recovered;
    if (this.kind === null) {
      this.kind = message.kind;
      this.#resolveSubscribed(message.kind);
    }
  }

  /** @internal */
  deliver(value, offset) {
    if (this.#terminal) return;
    this.delivered += 1;
    const known = typeof offset === "number" && this.epoch !== null ? offset : null;
    if (known !== null) this.#since = { offset: known, epoch: this.epoch };
    const waiter = this.#waiters.shift();
    if (waiter) {
      if (known !== null) this.lastOffset = known;
      this.#counted();
      waiter.resolve({ value, done: false });
    } else {
      this.#queue.push({ value, offset: known });
    }
  }

  /** @internal */
  finish() {
    this.#wire = false;
    this.#end({ error: null });
  }

  /** @internal */
  fail(error) {
    this.#wire = false;
    this.#end({ error });
  }

  #grant(amount) {
    if (this.requested === Infinity) return;
    this.requested = amount === "unlimited" || this.requested + amount >= MAX_SAFE ? Infinity : this.requested + amount;
    if (this.#wire) this.#core.requestMore(this, amount === "unlimited" ? "unlimited" : amount);
    else if (this.#initialDemand !== "unlimited") {
      // Not sent yet: the demand goes out with the subscribe.
      this.#initialDemand = this.requested === Infinity ? "unlimited" : this.#initialDemand + amount;
    }
  }

  #consume() {
    const { value, offset } = this.#queue[this.#head];
    if (offset !== null) this.lastOffset = offset;
    this.#queue[this.#head] = undefined;
    this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
    this.#counted();
    return { value, done: false };
  }

  /** A value went to the consumer: keep the prefetch window full (half a window at a time). */
  #counted() {
    if (this.#prefetch === 0 || this.#terminal) return;
    this.#consumedSinceGrant += 1;
    if (this.#consumedSinceGrant >= Math.max(1, Math.floor(this.#prefetch / 2))) {
      const grant = this.#consumedSinceGrant;
      this.#consumedSinceGrant = 0;
      this.#grant(grant);
    }
  }

  #terminalResult() {
    const { error } = this.#terminal;
    if (error && !this.#terminalReported) {
      this.#terminalReported = true;
      return Promise.reject(error);
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  #end(terminal) {
    if (this.#terminal) return;
    this.#terminal = terminal;
    this.#core.forget(this);
    if (this.kind === null) {
      if (terminal.error) this.#rejectSubscribed(terminal.error);
      else if (terminal.cancelled) {
        this.#rejectSubscribed(new HubError(ErrorCode.CANCELLED, "the subscription was cancelled before the hub confirmed it"));
      } else this.#resolveSubscribed(null);
    }
    if (terminal.error) this.#rejectDone(terminal.error);
    else this.#resolveDone();
    // Waiters exist only while the queue is empty: they get the end now.
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) {
      if (terminal.error && !this.#terminalReported) {
        this.#terminalReported = true;
        waiter.reject(terminal.error);
      } else {
        waiter.resolve({ value: undefined, done: true });
      }
    }
  }
}

// ---- The connection ----

class Core {
  constructor(hub, urls, options) {
    this.hub = hub;
    this.urls = urls; // the servers, tried in turn: the nodes of a cluster (one URL for a lone broker)
    this.urlIndex = 0; // which of urls the client uses now
    this.firstConnectFailures = 0; // how many URLs a first connection has tried without success (it tries each once)
    this.token = options.token;
    this.clientName = options.client;
    this.batch = options.batch !== false; // the batch form unless told not to: one message for many values
    this.connectTimeout = options.connectTimeout ?? 10000;
    this.requestTimeout = options.requestTimeout ?? 10000;
    this.bigint = options.bigint === true;
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") {
      throw new HubError(
        ErrorCode.INVALID_ARGUMENT,
        "no WebSocket: use a browser, Node >= 22, Node 20/21 with --experimental-websocket, or pass options.WebSocket",
      );
    }
    this.reconnect = options.reconnect === false ? null : { ...DEFAULT_RECONNECT, ...(options.reconnect ?? {}) };
    this.state = "idle";
    this.session = null;
    this.socket = null;
    this.generation = 0;
    this.everConnected = false;
    this.attempt = 0;
    this.attemptTimer = null;
    this.reconnectTimer = null;
    this.waiting = new Map(); // token -> work(error, socket)
    this.nextWaitingToken = 1;
    this.subscriptions = new Map(); // wire id -> Subscription
    this.resumeAfterLoss = []; // subscriptions the hub ended with shutting_down, resumed after the reconnect
    this.acks = new Map(); // ack -> {resolve, reject}
    this.nextId = 1;
    this.nextAck = 1;
    this.pendingFailure = null;
    this.closeWaiters = [];
  }

  /** The server the client uses now. */
  get url() {
    return this.urls[this.urlIndex];
  }

  // ---- Waiting for the connection ----

  withConnection(work) {
    switch (this.state) {
      case "open":
        work(null, this.socket);
        return null;
      case "closed":
        work(new HubError(ErrorCode.CLOSED, "the hub client is closed"));
        return null;
      default: {
        const token = this.nextWaitingToken++;
        this.waiting.set(token, work);
        if (this.state === "idle") this.startAttempt();
        return token;
      }
    }
  }

  cancelWaiting(token) {
    this.waiting.delete(token);
  }

  flushWaiting(error, socket) {
    const work = [...this.waiting.values()];
    this.waiting.clear();
    for (const run of work) run(error, socket);
  }

  connect() {
    return new Promise((resolve, reject) => this.withConnection((error) => (error ? reject(error) : resolve())));
  }

  // ---- Connecting ----

  startAttempt() {
    const generation = ++this.generation;
    this.state = "connecting";
    this.attempt += 1;
    this.pendingFailure = null;
    let socket;
    try {
      socket = new this.WebSocket(this.url, SUBPROTOCOL);
    } catch (error) {
      this.attemptFailed(new HubError(ErrorCode.CONNECTION_FAILED, `cannot connect to ${this.url}: ${error.message}`));
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      if (generation !== this.generation) return;
      opened = true;
      if (this.token !== undefined || this.clientName !== undefined || this.batch) {
        const hello = { op: "hello" };
        if (this.token !== undefined) hello.token = this.token;
        if (this.clientName !== undefined) hello.client = this.clientName;
        if (this.batch) hello.batch = true;
        this.sendOn(socket, hello);
      }
    };
    socket.onmessage = (event) => {
      if (generation !== this.generation) return;
      this.received(event.data, socket);
    };
    socket.onclose = (event) => {
      if (generation !== this.generation) return;
      this.closed(event.code, event.reason, opened);
    };
    socket.onerror = () => {
      // After an open, a close event follows. Before it, some WebSockets (Node 20's)
      // report a refused connection with an error and no close.
      if (generation !== this.generation || opened) return;
      this.attemptFailed(new HubError(ErrorCode.CONNECTION_FAILED, `cannot connect to ${this.url}`));
    };
    this.attemptTimer = setTimeout(() => {
      if (generation !== this.generation || this.state !== "connecting") return;
      this.attemptFailed(new HubError(ErrorCode.TIMEOUT, `connecting to ${this.url} timed out after ${this.connectTimeout} ms`));
    }, this.connectTimeout);
  }

  welcomed(socket, session) {
    if (this.state !== "connecting") return;
    clearTimeout(this.attemptTimer);
    this.attemptTimer = null;
    this.state = "open";
    this.everConnected = true;
    this.attempt = 0;
    this.firstConnectFailures = 0;
    this.session = session;
    this.hub.dispatchEvent(new HubEvent("open", session));
    this.flushWaiting(null, socket);
  }

  /** An attempt failed before `welcome`. */
  attemptFailed(error) {
    clearTimeout(this.attemptTimer);
    this.attemptTimer = null;
    this.generation += 1;
    this.dropSocket();
    const policy = this.reconnect;
    const authFailure = error.code === ErrorCode.UNAUTHORIZED;
    const tried = this.url;
    if (this.urls.length > 1 && !authFailure && this.state === "connecting") {
      // The next server is tried next; a first connection tries each once at once.
      this.urlIndex = (this.urlIndex + 1) % this.urls.length;
      if (!this.everConnected) {
        this.firstConnectFailures += 1;
        if (this.firstConnectFailures < this.urls.length) {
          this.startAttempt();
          return;
        }
        this.firstConnectFailures = 0;
      }
    }
    if (this.everConnected && policy && !authFailure && this.attempt < policy.maxAttempts) {
      this.scheduleReconnect();
      return;
    }
    this.state = "idle";
    let reported = error;
    if (this.everConnected && policy && !authFailure) {
      reported = new HubError(
        ErrorCode.DISCONNECTED,
        `gave up reconnecting to ${tried} after ${this.attempt} attempts: ${error.message}`,
        { closeCode: error.closeCode },
      );
    }
    this.attempt = 0;
    this.flushWaiting(reported);
  }

  scheduleReconnect() {
    this.state = "reconnecting";
    const delay = reconnectDelay(this.reconnect, this.attempt + 1);
    this.hub.dispatchEvent(new HubEvent("reconnecting", { attempt: this.attempt + 1, delay }));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.state === "reconnecting") this.startAttempt();
    }, delay);
  }

  closed(code, reason, opened) {
    this.socket = null;
    let failure = this.pendingFailure;
    this.pendingFailure = null;
    if (!failure) {
      if (!opened) {
        failure = new HubError(ErrorCode.CONNECTION_FAILED, `cannot connect to ${this.url}`);
      } else if (code === 4401) {
        failure = new HubError(ErrorCode.UNAUTHORIZED, `the hub at ${this.url} refused the token (close 4401)`, { closeCode: code });
      } else {
        let text = `disconnected from ${this.url}`;
        text += reason ? `: ${reason} (close ${code})` : ` (close ${code})`;
        failure = new HubError(ErrorCode.DISCONNECTED, text, { closeCode: code });
      }
    }
    switch (this.state) {
      case "connecting":
        this.attemptFailed(failure);
        break;
      case "open":
        this.lost(failure);
        break;
      case "closed":
        this.finishClose();
        break;
      default:
        break;
    }
  }

  /** An established connection was lost: subscriptions and calls fail (or resume); reconnect by the policy. */
  lost(failure) {
    this.session = null;
    this.generation += 1;
    this.hub.dispatchEvent(new HubEvent("disconnect", failure));
    const policy = this.reconnect;
    const reconnecting = policy && failure.code !== ErrorCode.UNAUTHORIZED;
    // Before the subscriptions hear of it, so that one that resumes waits for the next connection.
    this.state = reconnecting ? "reconnecting" : "idle";
    this.failEverything(failure, reconnecting);
    if (reconnecting) {
      this.attempt = 0;
      // Another node of the cluster, when there are several: this one went away (or drains).
      if (this.urls.length > 1) this.urlIndex = (this.urlIndex + 1) % this.urls.length;
      this.scheduleReconnect();
    }
  }

  failEverything(failure, reconnecting = false) {
    const subscriptions = [...this.resumeAfterLoss, ...this.subscriptions.values()];
    this.resumeAfterLoss = [];
    this.subscriptions.clear();
    const acks = [...this.acks.values()];
    this.acks.clear();
    for (const subscription of subscriptions) subscription.lost(failure, reconnecting);
    for (const pending of acks) pending.reject(failure);
  }

  dropSocket() {
    const socket = this.socket;
    this.socket = null;
    if (!socket) return;
    socket.onopen = socket.onmessage = socket.onclose = null;
    socket.onerror = () => {};
    try {
      socket.close();
    } catch {
      // already closing
    }
  }

  // ---- Inbound ----

  received(data, socket) {
    if (typeof data !== "string") {
      this.protocolViolation("the server sent a binary message", socket);
      return;
    }
    let message;
    try {
      message = this.bigint ? parseExact(data) : JSON.parse(data);
    } catch (error) {
      this.protocolViolation(`the server sent invalid JSON: ${error.message}`, socket);
      return;
    }
    if (message === null || typeof message !== "object" || typeof message.op !== "string") {
      this.protocolViolation(`the server sent a message without op: ${data.slice(0, 200)}`, socket);
      return;
    }
    this.handle(message, socket);
  }

  protocolViolation(text, socket) {
    this.pendingFailure = new HubError(ErrorCode.PROTOCOL_ERROR, `${text} (${this.url})`);
    try {
      socket.close(1008, "protocol error");
    } catch {
      socket.close();
    }
  }

  handle(message, socket) {
    switch (message.op) {
      case "welcome":
        this.welcomed(socket, message.session);
        break;
      case "subscribed":
        this.subscriptions.get(message.id)?.confirmed(message);
        break;
      case "next": {
        const subscription = this.subscriptions.get(message.id);
        if (!subscription) break;
        const offset = typeof message.offset === "number" ? message.offset : null;
        if (Array.isArray(message.values)) {
          let index = 0;
          for (const value of message.values) {
            if (subscription.ended) break;
            subscription.deliver(value, offset === null ? null : offset + index);
            index += 1;
          }
        } else {
          subscription.deliver(message.value, offset);
        }
        break;
      }
      case "complete": {
        const subscription = this.subscriptions.get(message.id);
        this.subscriptions.delete(message.id);
        subscription?.finish();
        break;
      }
      case "error": {
        const error = new HubError(message.code, message.message ?? message.code, { data: message.data, fromServer: true });
        if (message.id !== undefined) {
          const subscription = this.subscriptions.get(message.id);
          this.subscriptions.delete(message.id);
          if (subscription && message.code === ErrorCode.SHUTTING_DOWN && this.reconnect && subscription.resumePlan()) {
            // The hub is stopping: this subscription resumes once the client has reconnected.
            this.resumeAfterLoss.push(subscription);
            break;
          }
          subscription?.fail(error);
        } else if (message.ack !== undefined) {
          const pending = this.acks.get(message.ack);
          this.acks.delete(message.ack);
          pending?.reject(error);
        } else {
          if (message.code === ErrorCode.UNAUTHORIZED || message.code === ErrorCode.SHUTTING_DOWN) this.pendingFailure = error;
          this.hub.dispatchEvent(new HubEvent("error", error));
        }
        break;
      }
      case "ack":
      case "catalog":
      case "entry": {
        const pending = this.acks.get(message.ack);
        this.acks.delete(message.ack);
        pending?.resolve(message);
        break;
      }
      default:
        // A newer server's message this client does not know: ignored (forward compatibility).
        break;
    }
  }

  // ---- Outbound ----

  sendOn(socket, message) {
    socket.send(stringify(message));
  }

  /** An acked request: resolves with the server's `ack`/`catalog`, rejects with its error; bounded by requestTimeout. */
  call(build) {
    return new Promise((resolve, reject) => {
      let done = false;
      let ack = null;
      let token = null;
      const finish = (settle, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settle(value);
      };
      const timer = setTimeout(() => {
        if (ack !== null) this.acks.delete(ack);
        if (token !== null) this.cancelWaiting(token);
        finish(reject, new HubError(ErrorCode.TIMEOUT, `no answer from ${this.url} within ${this.requestTimeout} ms`));
      }, this.requestTimeout);
      token = this.withConnection((error, socket) => {
        token = null;
        if (done) return;
        if (error) {
          finish(reject, error);
          return;
        }
        ack = this.nextAck++;
        this.acks.set(ack, { resolve: (message) => finish(resolve, message), reject: (e) => finish(reject, e) });
        try {
          this.sendOn(socket, build(ack));
        } catch (e) {
          this.acks.delete(ack);
          finish(reject, invalid(`cannot encode the request: ${e.message}`));
        }
      });
    });
  }

  /** Gives a subscription its wire id; returns its `subscribe` message. */
  register(subscription, target, demand, { buffer, overflow, batch }) {
    const id = this.nextId++;
    subscription.id = id;
    this.subscriptions.set(id, subscription);
    const message = { op: "subscribe", id, ...target, demand };
    if (buffer !== undefined) message.buffer = buffer;
    if (overflow !== undefined) message.overflow = overflow;
    if (batch !== undefined) message.batch = batch;
    return message;
  }

  requestMore(subscription, n) {
    if (this.state === "open" && this.subscriptions.get(subscription.id) === subscription) {
      this.sendOn(this.socket, { op: "request", id: subscription.id, n });
    }
  }

  cancelSubscription(subscription) {
    if (this.state === "open" && this.subscriptions.get(subscription.id) === subscription) {
      this.sendOn(this.socket, { op: "cancel", id: subscription.id });
    }
    this.forget(subscription);
  }

  forget(subscription) {
    if (this.subscriptions.get(subscription.id) === subscription) this.subscriptions.delete(subscription.id);
  }

  // ---- Closing ----

  close() {
    if (this.state === "closed") {
      return this.socket ? new Promise((resolve) => this.closeWaiters.push(resolve)) : Promise.resolve();
    }
    this.state = "closed";
    this.session = null;
    clearTimeout(this.attemptTimer);
    clearTimeout(this.reconnectTimer);
    const error = new HubError(ErrorCode.CLOSED, "the hub client is closed");
    this.flushWaiting(error);
    this.failEverything(error);
    const socket = this.socket;
    if (!socket) return Promise.resolve();
    return new Promise((resolve) => {
      this.closeWaiters.push(resolve);
      try {
        socket.close(1000);
      } catch {
        this.finishClose();
      }
    });
  }

  finishClose() {
    this.socket = null;
    const waiters = this.closeWaiters;
    this.closeWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

// ---- Helpers ----

/** A `since` option: `{offset, epoch?}` or `{last}` with integers 0..2^53-1. */
function checkSince(since) {
  const count = (n) => Number.isInteger(n) && n >= 0 && n <= MAX_SAFE;
  if (since && typeof since === "object") {
    if (since.offset !== undefined && since.last === undefined && count(since.offset)) {
      if (since.epoch !== undefined && typeof since.epoch !== "string") throw invalid("since.epoch must be a string");
      return since.epoch === undefined ? { offset: since.offset } : { offset: since.offset, epoch: since.epoch };
    }
    if (since.last !== undefined && since.offset === undefined && count(since.last)) return { last: since.last };
  }
  throw invalid(`since must be {offset, epoch?} or {last} with integers >= 0, got ${JSON.stringify(since)}`);
}

/** One URL, or a non-empty array of them (the nodes of a cluster): each checked. */
function checkURLs(urls) {
  if (!Array.isArray(urls)) return [checkURL(urls)];
  if (urls.length === 0) throw new HubError(ErrorCode.INVALID_URL, "no server URL given");
  return urls.map(checkURL);
}

function checkURL(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new HubError(ErrorCode.INVALID_URL, `not a URL: ${url}`);
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") {
    throw new HubError(ErrorCode.INVALID_URL, `the URL must be ws:// or wss://, got ${url}`);
  }
  return parsed.href;
}

/** Catalog order of two cursors ("s:NAME", "p:NAME", "t:NAME"): subjects, pipelines, triggers, then bytewise names. */
function cursorOrder(a, b) {
  const rank = (cursor) => "spt".indexOf(cursor[0]);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  const [x, y] = [a.slice(2), b.slice(2)]; // names are ASCII: code unit order is byte order
  return x < y ? -1 : x > y ? 1 : 0;
}

function nothing() {
  return undefined;
}

function invalid(message) {
  return new HubError(ErrorCode.INVALID_ARGUMENT, message);
}

function rejected(error) {
  return handled(Promise.reject(error));
}

/** Marks a promise as handled (no unhandled-rejection report) and returns it unchanged for its users. */
function handled(promise) {
  promise.catch(() => {});
  return promise;
}

/** A demand: an integer >= 1 (>= 0 when `zeroAllowed`), or "unlimited" (Infinity). */
function demandValue(n, zeroAllowed) {
  if (n === "unlimited" || n === Infinity) return "unlimited";
  if (typeof n === "bigint") n = Number(n);
  if (Number.isInteger(n) && n >= (zeroAllowed ? 0 : 1)) return n >= MAX_SAFE ? "unlimited" : n;
  throw new HubError(ErrorCode.INVALID_DEMAND, `demand must be an integer >= ${zeroAllowed ? 0 : 1} or "unlimited", got ${String(n)}`);
}

function reconnectDelay(policy, attempt) {
  let delay = policy.initialDelay;
  for (let step = 1; step < attempt && delay < policy.maxDelay; step += 1) delay *= Math.max(1, policy.multiplier);
  delay = Math.min(delay, policy.maxDelay);
  const jitter = Math.min(Math.max(policy.jitter ?? 0, 0), 1);
  return Math.round(delay * (1 - jitter * Math.random()));
}

/** JSON text of `value`; BigInts are written as exact integers. */
function stringify(value) {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return stringifyExact(value);
  }
}

function stringifyExact(value) {
  if (typeof value === "bigint") return value.toString();
  if (value !== null && typeof value === "object" && typeof value.toJSON !== "function") {
    if (Array.isArray(value)) return `[${value.map((x) => stringifyExact(x) ?? "null").join(",")}]`;
    const parts = [];
    for (const key of Object.keys(value)) {
      const text = stringifyExact(value[key]);
      if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(value);
}

const SOURCE_TEXT_ACCESS = (() => {
  try {
    let seen = false;
    JSON.parse("1", (key, value, context) => {
      seen = typeof context?.source === "string";
      return value;
    });
    return seen;
  } catch {
    return false;
  }
})();

/**
 * JSON.parse, except that integers outside ±(2^53−1) become BigInts (the
 * protocol's exact 64-bit integers): the reader of `bigint: true`.
 * @param {string} text
 */
export function parseExactJSON(text) {
  return parseExact(text);
}

function parseExact(text) {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  if (SOURCE_TEXT_ACCESS) {
    return JSON.parse(text, (key, value, context) =>
      typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) && /^-?\d+$/.test(context.source)
        ? BigInt(context.source)
        : value,
    );
  }
  return new ExactParser(text).document();
}

/** A JSON reader for engines without JSON.parse source text access. */
class ExactParser {
  static #number = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

  constructor(text) {
    this.text = text;
    this.i = 0;
  }

  document() {
    const value = this.value();
    this.space();
    if (this.i !== this.text.length) this.fail("unexpected text after the value");
    return value;
  }

  fail(what) {
    throw new SyntaxError(`${what} at offset ${this.i}`);
  }

  space() {
    const t = this.text;
    while (this.i < t.length && (t[this.i] === " " || t[this.i] === "\n" || t[this.i] === "\r" || t[this.i] === "\t")) this.i += 1;
  }

  value() {
    this.space();
    const c = this.text[this.i];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]]) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return value;
      }
    }
    return this.number();
  }

  object() {
    const result = {};
    this.i += 1;
    this.space();
    if (this.text[this.i] === "}") {
      this.i += 1;
      return result;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') this.fail("expected a key");
      const key = this.string();
      this.space();
      if (this.text[this.i] !== ":") this.fail("expected ':'");
      this.i += 1;
      Object.defineProperty(result, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.text[this.i++];
      if (c === "}") return result;
      if (c !== ",") this.fail("expected ',' or '}'");
    }
  }

  array() {
    const result = [];
    this.i += 1;
    this.space();
    if (this.text[this.i] === "]") {
      this.i += 1;
      return result;
    }
    for (;;) {
      result.push(this.value());
      this.space();
      const c = this.text[this.i++];
      if (c === "]") return result;
      if (c !== ",") this.fail("expected ',' or ']'");
    }
  }

  string() {
    const start = this.i;
    this.i += 1;
    for (;;) {
      const c = this.text.charCodeAt(this.i);
      if (Number.isNaN(c)) this.fail("unterminated string");
      if (c === 34) break;
      this.i += c === 92 ? 2 : 1;
    }
    this.i += 1;
    return JSON.parse(this.text.slice(start, this.i));
  }

  number() {
    const pattern = ExactParser.#number;
    pattern.lastIndex = this.i;
    const match = pattern.exec(this.text);
    if (!match) this.fail("expected a value");
    this.i = pattern.lastIndex;
    const number = Number(match[0]);
    if (match[1] === undefined && match[2] === undefined && !Number.isSafeInteger(number)) return BigInt(match[0]);
    return number;
  }
}
