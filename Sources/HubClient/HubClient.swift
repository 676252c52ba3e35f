import HubLoop
import HubValue
import HubWire
import HubTransport
import Logging
import Synchronization

/// A connection to a Reactive Hub server speaking protocol v1 (PROTOCOL.md).
///
/// ```swift
/// let client = try await HubClient.connect(to: "ws://127.0.0.1:7420/")
/// try await client.send(42, to: "prices")
/// for try await price in client.subscribe(to: "prices").values() { print(price) }
/// await client.close()
/// ```
///
/// - Connection: `ws://host:port/path` (or `wss://` over TLS, verified as
///   ``Configuration/tls`` says) with the `hub.v1` subprotocol, an optional
///   bearer token (header or `hello`) and an optional `hello` (client name,
///   batch). The client connects on ``connect()`` or on the first call that needs
///   the connection. A first connection that fails fails that call (code
///   `connection_failed` naming `host:port`, or `timeout`); it is not retried.
/// - Reconnect: when an established connection is lost, every live subscription
///   and every call waiting for its ack fails with `disconnected` (subscriptions
///   are never resumed), and the client reconnects with exponential backoff
///   (``ReconnectPolicy``). Calls and subscriptions made while it is reconnecting
///   **wait** for the reconnection, each bounded by
///   ``Configuration/requestTimeout`` (calls) or until the policy gives up
///   (`disconnected`).
/// - Threading: the client is `Sendable`; its async calls may be made from any
///   task. It runs on one ``EventLoop``: its own (made at init and stopped by
///   ``close()``) or an injected one shared by several clients, which must outlive
///   them. Subscribers of ``HubPublisher`` receive their callbacks on that loop.
/// - Ids: subscription ids increase over the client's life (never reused), acks too.
public final class HubClient: Sendable {
    /// The server's URL (the first of ``urls``).
    public let url: HubURL
    /// The servers the client connects to, in turn: the nodes of a cluster of brokers.
    /// The first connection tries each once until one answers; after a lost connection
    /// the client reconnects (by its ``Configuration/reconnect`` policy) to the next.
    public let urls: [HubURL]
    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The loop the client's connection and subscriptions run on.
    public let eventLoop: EventLoop
    let core: LoopBound<ClientCore>
    private let ownsLoop: Bool
    private let isClosed = Atomic<Bool>(false)

    /// A client for `url` (`ws://host:port/path` or `wss://…`); nothing connects until
    /// ``connect()`` or the first call.
    ///
    /// - Parameter eventLoop: the loop to run on; `nil` starts one for this client.
    /// - Throws: `invalid_url` naming the offending part of `url`;
    ///   `connection_failed` if the client's own event loop cannot start.
    public convenience init(
        url: String, configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) throws(HubClientError) {
        try self.init(url: try HubURL(parsing: url), configuration: configuration, eventLoop: eventLoop, logger: logger)
    }

    /// A client for an already parsed URL (see the `String` initialiser).
    public convenience init(
        url: HubURL, configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) throws(HubClientError) {
        try self.init(urls: [url], configuration: configuration, eventLoop: eventLoop, logger: logger)
    }

    /// A client for several servers, the nodes of a cluster (`ws://…` or `wss://…` each):
    /// see ``urls``.
    ///
    /// - Throws: `invalid_url` naming the offending URL, or when there is none.
    public convenience init(
        urls: [String], configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) throws(HubClientError) {
        var parsed: [HubURL] = []
        for url in urls { parsed.append(try HubURL(parsing: url)) }
        try self.init(urls: parsed, configuration: configuration, eventLoop: eventLoop, logger: logger)
    }

    /// A client for several already parsed URLs (see the `String` initialiser).
    public init(
        urls: [HubURL], configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) throws(HubClientError) {
        guard let first = urls.first else { throw HubClientError(code: .invalidURL, message: "no server URL given") }
        self.url = first
        self.urls = urls
        self.configuration = configuration
        if let eventLoop {
            self.eventLoop = eventLoop
            ownsLoop = false
        } else {
            do {
                self.eventLoop = try EventLoop(configuration: .init(name: "hub-client"), logger: logger)
            } catch {
                throw HubClientError(code: .connectionFailed, message: "cannot start the client's event loop: \(error)")
            }
            ownsLoop = true
        }
        core = LoopBound(
            ClientCore(urls: urls, configuration: configuration, eventLoop: self.eventLoop, logger: logger),
            eventLoop: self.eventLoop)
    }

    deinit {
        if ownsLoop { eventLoop.shutdown() }
    }

    /// Makes a client and connects it (waits for the server's `welcome`).
    public static func connect(
        to url: String, configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) async throws(HubClientError) -> HubClient {
        try await connected(HubClient(url: url, configuration: configuration, eventLoop: eventLoop, logger: logger))
    }

    /// Makes a client of the nodes `urls` (see ``init(urls:configuration:eventLoop:logger:)``)
    /// and connects it to the first that answers.
    public static func connect(
        to urls: [String], configuration: Configuration = Configuration(), eventLoop: EventLoop? = nil,
        logger: Logger = Logger(label: "hub.client")
    ) async throws(HubClientError) -> HubClient {
        try await connected(HubClient(urls: urls, configuration: configuration, eventLoop: eventLoop, logger: logger))
    }

    /// `client`, connected; closed when it cannot connect.
    private static func connected(_ client: HubClient) async throws(HubClientError) -> HubClient {
        do throws(HubClientError) {
            try await client.connect()
        } catch {
            await client.close()
            throw error
        }
        return client
    }

    /// Connects, if not connected, and waits for the server's `welcome` (or, while
    /// reconnecting, for the reconnection).
    ///
    /// - Throws: `connection_failed` (with `host:port`), `timeout`, `protocol_error`,
    ///   `unauthorized`, `disconnected` (reconnecting gave up) or `closed`.
    public func connect() async throws(HubClientError) {
        _ = try await perform { (core, done: @escaping (Result<Void, HubClientError>) -> Void) in
            core.withConnection { done($0.map { _ in () }) }
        }
    }

    /// Closes the connection (1000) and fails what is live with `closed`; stops
    /// the client's own event loop. Idempotent.
    public func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let core = self.core
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute { core.value.close { continuation.resume() } }
        }
        if ownsLoop { eventLoop.shutdown() }
    }

    // MARK: - Subscriptions

    /// The subject, named pipeline or trigger `name` as a publisher (see ``HubPublisher``).
    public func subscribe(to name: String, options: SubscribeOptions = SubscribeOptions()) -> HubPublisher {
        HubPublisher(client: self, target: .name(name), options: options)
    }

    /// An ad-hoc pipeline (compiled by the server for each subscription) as a publisher.
    public func subscribe(pipeline: String, options: SubscribeOptions = SubscribeOptions()) -> HubPublisher {
        HubPublisher(client: self, target: .pipeline(pipeline), options: options)
    }

    /// The values of `name` as an `AsyncSequence` with `prefetch` values in flight.
    public func values(of name: String, prefetch: Int = HubValues.defaultPrefetch, options: SubscribeOptions = SubscribeOptions()) -> HubValues {
        subscribe(to: name, options: options).values(prefetch: prefetch)
    }

    // MARK: - Acked calls

    /// Sends `value` into the subject `name` and waits for the server's ack.
    ///
    /// - Throws: the server's error (for example `completed`, `not_found`,
    ///   `bad_message` for an invalid name) or a connection failure.
    public func send(_ value: Value, to name: String) async throws(HubClientError) {
        try await acked { .send(to: name, value: value, ack: $0) }
    }

    /// Completes the subject `name`.
    public func complete(_ name: String) async throws(HubClientError) {
        try await acked { .complete(to: name, ack: $0) }
    }

    /// Fails the subject `name` with the JSON value `error`.
    public func fail(_ name: String, error: Value) async throws(HubClientError) {
        try await acked { .fail(to: name, error: error, ack: $0) }
    }

    /// Activates the trigger `name`, for `key` when given.
    public func trigger(_ name: String, key: Value? = nil) async throws(HubClientError) {
        try await acked { .trigger(name: name, key: key, ack: $0) }
    }

    /// Deletes the subject `name` (its subscribers complete; a completed or failed subject
    /// can be used again; a declared one starts over with its initial value).
    public func delete(_ name: String) async throws(HubClientError) {
        try await acked { .delete(name: name, ack: $0) }
    }

    /// Asks the server to drain (needs the `admin` permission): it refuses new
    /// connections and closes the open ones, this one included, with 1012 over `grace`
    /// (its configured default when `nil`), then stops. Returns at the server's ack.
    public func drain(grace: Duration? = nil) async throws(HubClientError) {
        try await acked { .drain(grace: grace, ack: $0) }
    }

    /// The server's whole catalog: subjects, named pipelines and triggers with subscriber
    /// counts. A large catalog comes in pages (``list(after:limit:)``): this asks for
    /// each in turn and returns them together, with `next` `nil`.
    public func list() async throws(HubClientError) -> Catalog {
        var catalog = try await list(after: nil)
        while let next = catalog.next {
            let page = try await list(after: next)
            if let following = page.next, following <= next {
                throw HubClientError(code: .protocolError, message: "the server's catalog went back from \(next) to \(following)")
            }
            catalog.append(page: page)
        }
        return catalog
    }

    /// One page of the server's catalog: the entries after `after` (the ``Catalog/next``
    /// of the previous page; from the start when `nil`), at most `limit` of them
    /// (1...``Catalog/maxPageEntries``; the server's page size when `nil`). Its `next`
    /// is where the following page starts, `nil` on the last page.
    public func list(after: CatalogCursor?, limit: Int? = nil) async throws(HubClientError) -> Catalog {
        if let limit, !(1...Catalog.maxPageEntries).contains(limit) {
            throw HubClientError(code: HubClientError.Code(.badMessage), message: "list: limit must be from 1 to \(Catalog.maxPageEntries), got \(limit)")
        }
        let answer = try await call { .list(ack: $0, after: after, limit: limit) }
        guard case let .catalog(_, catalog) = answer else {
            throw HubClientError(code: .protocolError, message: "the server answered list with \(answer) instead of a catalog")
        }
        return catalog
    }

    /// The current value of `key` in the table subject `table` (`get`), or `nil` when the
    /// table has no such key. A name that is not a table subject is `not_found`.
    public func get(_ key: Value, from table: String) async throws(HubClientError) -> Value? {
        let answer = try await call { .get(name: table, key: key, ack: $0) }
        guard case let .entry(_, _, value, _) = answer else {
            throw HubClientError(code: .protocolError, message: "the server answered get with \(answer) instead of an entry")
        }
        return value
    }

    // MARK: - Diagnostics

    /// The session id of the current connection (`nil` when not connected).
    public var session: String? {
        get async { try? await perform { core, done in done(.success(core.session)) } }
    }

    /// How many times the client connected successfully (reconnections included).
    public var connectCount: Int {
        get async { (try? await perform { core, done in done(.success(core.connectCount)) }) ?? 0 }
    }

    // MARK: - Plumbing

    /// Whether ``close()`` was called.
    var isClosedNow: Bool { isClosed.load(ordering: .acquiring) }

    private func acked(_ build: @escaping @Sendable (Int64) -> ClientMessage) async throws(HubClientError) {
        let answer = try await call(build)
        guard case .ack = answer else {
            throw HubClientError(code: .protocolError, message: "the server answered with \(answer) instead of an ack")
        }
    }

    private func call(_ build: @escaping @Sendable (Int64) -> ClientMessage) async throws(HubClientError) -> ServerMessage {
        try await perform { core, done in core.call(build, completion: done) }
    }

    /// Runs `body` on the loop with the core and a completion that resumes the caller.
    private func perform<T: Sendable>(
        _ body: @escaping @Sendable (ClientCore, @escaping (Result<T, HubClientError>) -> Void) -> Void
    ) async throws(HubClientError) -> T {
        guard !isClosed.load(ordering: .acquiring) else {
            throw HubClientError(code: .closed, message: "the client is closed")
        }
        let core = self.core
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, HubClientError>, Never>) in
            eventLoop.execute {
                body(core.value) { continuation.resume(returning: $0) }
            }
        }
        return try result.get()
    }
}
