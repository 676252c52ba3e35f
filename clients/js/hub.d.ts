// TypeScript declarations of hub.js, the Reactive Hub client (protocol v1).

/** Any JSON value (with `bigint: true`, integers outside ±(2^53−1) are BigInts). */
export type JSONValue = null | boolean | number | bigint | string | JSONValue[] | { [key: string]: JSONValue };

/** The WebSocket subprotocol of protocol v1: `"hub.v1"`. */
export declare const SUBPROTOCOL: "hub.v1";

/** Values a subscription keeps requested ahead of its consumer unless `prefetch` says otherwise. */
export declare const DEFAULT_PREFETCH: 65536;

/** Every code a {@link HubError} can carry: the server's (PROTOCOL.md §6) and the client's own. */
export declare const ErrorCode: {
  readonly BAD_MESSAGE: "bad_message";
  readonly UNKNOWN_OP: "unknown_op";
  readonly NOT_FOUND: "not_found";
  readonly DUPLICATE_ID: "duplicate_id";
  readonly INVALID_DEMAND: "invalid_demand";
  readonly PIPELINE_ERROR: "pipeline_error";
  readonly FAILED: "failed";
  readonly OVERFLOW: "overflow";
  readonly FORBIDDEN: "forbidden";
  readonly UNAUTHORIZED: "unauthorized";
  readonly LIMIT_EXCEEDED: "limit_exceeded";
  readonly COMPLETED: "completed";
  readonly INVALID_VALUE: "invalid_value";
  readonly STORAGE_UNAVAILABLE: "storage_unavailable";
  readonly SHUTTING_DOWN: "shutting_down";
  readonly INTERNAL: "internal";
  readonly INVALID_URL: "invalid_url";
  readonly INVALID_ARGUMENT: "invalid_argument";
  readonly CONNECTION_FAILED: "connection_failed";
  readonly TIMEOUT: "timeout";
  readonly PROTOCOL_ERROR: "protocol_error";
  readonly DISCONNECTED: "disconnected";
  readonly CLOSED: "closed";
  readonly CANCELLED: "cancelled";
  readonly RESUME_FAILED: "resume_failed";
};

/** One of the codes of {@link ErrorCode} (a newer server may send others). */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode] | (string & {});

/** JSON.parse, except that integers outside ±(2^53−1) become BigInts (the reader of `bigint: true`). */
export declare function parseExactJSON(text: string): JSONValue;

/** A failure with a stable machine-readable code. */
export declare class HubError extends Error {
  constructor(code: ErrorCodeValue, message: string, details?: { data?: JSONValue; closeCode?: number; fromServer?: boolean });
  readonly name: "HubError";
  /** The protocol's code (`not_found`, `overflow`, …) or the client's (`disconnected`, `timeout`, …). */
  readonly code: ErrorCodeValue;
  /** The server's `data`: a pipeline_error's `{line, column}`, a failed stream's error value. */
  readonly data: JSONValue | undefined;
  /** The WebSocket close code of a `disconnected` error, when the server sent one. */
  readonly closeCode: number | undefined;
  /** Whether the server reported this error. */
  readonly fromServer: boolean;
}

/** How the client reconnects after an established connection is lost (times in ms). */
export interface ReconnectOptions {
  /** The delay before the first attempt (default 100). */
  initialDelay?: number;
  /** The factor applied after every failed attempt (default 2). */
  multiplier?: number;
  /** The cap of the delay (default 5000). */
  maxDelay?: number;
  /** Attempts in a row before giving up (default Infinity). */
  maxAttempts?: number;
  /** A random fraction (0…1) taken off each delay so that clients do not reconnect in step (default 0.2). */
  jitter?: number;
}

export interface HubOptions {
  /** A token for a hub that requires one: sent in `hello`. */
  token?: string;
  /** A client name sent in `hello`. */
  client?: string;
  /**
   * Ask for the batch form of `next` (several values in one message) for every
   * subscription (default true; `false`: one message per value). The client flattens it.
   */
  batch?: boolean;
  /** The reconnect policy, or `false` to never reconnect. */
  reconnect?: ReconnectOptions | false;
  /** ms to wait for the connection and `welcome` (default 10000). */
  connectTimeout?: number;
  /** ms to wait for each acked call, connecting included (default 10000). */
  requestTimeout?: number;
  /** Integers outside ±(2^53−1) arrive as BigInts instead of inexact numbers (default false). */
  bigint?: boolean;
  /** The WebSocket constructor (default: the global one). */
  WebSocket?: typeof WebSocket;
}

export interface SubscribeOptions {
  /** Values kept requested ahead of the consumer (default `DEFAULT_PREFETCH`, 65536); 0: manual demand with `request(n)`. */
  prefetch?: number;
  /** With `prefetch: 0`, the demand sent with the subscription (default 0). */
  demand?: number | "unlimited";
  /** The hot buffer the hub keeps for this subscription (≥ 1). */
  buffer?: number;
  /** What the hub does when that buffer is full (default: the subject's, else `error`). */
  overflow?: "error" | "dropOldest" | "dropNewest" | "latest";
  /** Ask for the batch form of `next`, or not (default: the hub's `batch`, true). The client flattens it. */
  batch?: boolean;
  /**
   * On a subject with history: start after an offset (of an epoch), or with the last
   * values, then go on live. If the hub no longer holds them the subscription fails
   * with `resume_failed`.
   */
  since?: { offset: number; epoch?: string } | { last: number };
}

export type SubscriptionKind = "subject" | "pipeline" | "trigger";

export interface Catalog {
  subjects: { name: string; kind: "passthrough" | "currentValue"; value?: JSONValue; subscribers: number; state?: "open" | "completed" | "failed" }[];
  pipelines: { name: string; subscribers: number }[];
  triggers: { name: string; subscribers?: number }[];
  /** The server's open connections, when it says. */
  connections?: number;
}

/** One page of the catalog: `next` (absent on the last page) is the `after` of the following one. */
export interface CatalogPage extends Catalog {
  next?: string;
}

export type HubState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

/** An event of a {@link Hub}, its data in `detail`. */
export declare class HubEvent<T = unknown> extends Event {
  constructor(type: string, detail: T);
  readonly detail: T;
}

export interface HubEventMap {
  open: HubEvent<string>;
  disconnect: HubEvent<HubError>;
  reconnecting: HubEvent<{ attempt: number; delay: number }>;
  error: HubEvent<HubError>;
}

/** A connection to a hub; calls wait for it, and it reconnects with back-off after a loss. */
export declare class Hub extends EventTarget {
  /**
   * One URL, or several: the nodes of a cluster. The first connection tries each in
   * turn at once (it fails, with the last failure, only when all did); after a loss
   * the client reconnects to the next one, with the usual back-off.
   * Throws a HubError `invalid_url` for anything but a ws:// or wss:// URL (naming
   * it), or an empty array.
   */
  constructor(url?: string | readonly string[], options?: HubOptions);
  /** The URL in use now (one of `urls`). */
  readonly url: string;
  /** Every URL given, in the order they are tried. */
  readonly urls: string[];
  readonly state: HubState;
  readonly session: string | null;
  /** Connects now; resolves once welcomed. */
  connect(): Promise<void>;
  /** Resolves on the hub's ack. */
  send(to: string, value: JSONValue): Promise<void>;
  complete(to: string): Promise<void>;
  /** Deletes a subject: its subscribers complete; a completed one can be used again. */
  delete(name: string): Promise<void>;
  /** The current value of `key` in the table subject `table`; `undefined` when it has no such key. */
  get<T = JSONValue>(table: string, key: string | number): Promise<T | undefined>;
  fail(to: string, error: JSONValue): Promise<void>;
  trigger(name: string, key?: JSONValue): Promise<void>;
  /** The whole catalog, every page joined. */
  list(): Promise<Catalog>;
  /** One page: the entries after `after` (an earlier page's `next`), at most `limit` (1–10,000). */
  listPage(options?: { after?: string; limit?: number }): Promise<CatalogPage>;
  /** A subject, named pipeline or trigger by name, or pipeline text. */
  subscribe<T = JSONValue>(target: string | { to: string } | { pipeline: string }, options?: SubscribeOptions): Subscription<T>;
  /** Closes (close 1000); live calls and subscriptions fail with `closed`. */
  close(): Promise<void>;
  addEventListener<K extends keyof HubEventMap>(
    type: K,
    listener: (event: HubEventMap[K]) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
}

/**
 * One remote subscription: an async iterator whose `next()` is demand, or a
 * ReadableStream (`readable`) whose `pull()` is demand — one of the two.
 */
export declare class Subscription<T = JSONValue> implements AsyncIterableIterator<T> {
  /** The wire id (null until sent). */
  readonly id: number | null;
  /** The kind the hub answered (null until then). */
  readonly kind: SubscriptionKind | null;
  /** Values delivered by the hub so far. */
  readonly delivered: number;
  /** Demand granted so far (Infinity: unlimited). */
  readonly requested: number;
  /** The history offset of the last value `next()` handed out (null without history). */
  readonly lastOffset: number | null;
  /** The epoch of the subject's history (null without history). */
  readonly epoch: string | null;
  /** The subject's latest offset when the hub confirmed the subscription (null without history). */
  readonly startOffset: number | null;
  /** With `since`: whether the hub still held what it asked for (null without `since`). */
  readonly recovered: boolean | null;
  /** Resolves with the kind once confirmed; rejects if the subscription fails (or is cancelled) first. */
  readonly subscribed: Promise<SubscriptionKind>;
  /** Resolves on completion or cancellation; rejects with the failure. */
  readonly done: Promise<void>;
  readonly target: { to: string } | { pipeline: string };
  readonly ended: boolean;
  /** A ReadableStream of the values whose `pull()` is demand. */
  readonly readable: ReadableStream<T>;
  /** Grants `n` more values (integer ≥ 1, or "unlimited"). */
  request(n: number | "unlimited"): void;
  /** Cancels; a waiting `next()` returns done. */
  cancel(): void;
  next(): Promise<IteratorResult<T, undefined>>;
  return(): Promise<IteratorResult<T, undefined>>;
  [Symbol.asyncIterator](): AsyncIterableIterator<T>;
}
