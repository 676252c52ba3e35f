import HubTransport

/// One event loop of the benchmark's load generator, with its WebSocket client and
/// what its subscribers measured. Everything but ``eventLoop`` is used on that loop
/// only (the `@unchecked Sendable` lets the command hand the object to the loop).
final class BenchLoop: @unchecked Sendable {
    /// The loop's thread runs the clients' connections.
    let eventLoop: EventLoop
    /// Latencies recorded by this loop's subscribers while measuring (loop only).
    var histogram = BenchHistogram()
    /// The connections opened on this loop for the current case (loop only).
    var connections: [WebSocketConnection] = []
    private var client: WebSocketClient?

    /// A new loop named `name`. Inbound UTF-8 is not validated: the load generator
    /// trusts the server it measures, and checking would only slow the client down.
    init(name: String) throws {
        eventLoop = try EventLoop(configuration: .init(name: name, validatesUTF8: false))
    }

    /// Connects to `target` with `handler` and keeps the connection for ``closeAll()``.
    /// Loop only.
    func connect(to target: BenchTarget, handler: any WebSocketConnectionHandler) -> WebSocketConnection {
        let client = self.client ?? WebSocketClient(
            eventLoop: eventLoop,
            configuration: .init(
                limits: .init(maximumMessageSize: 64 << 20), pingInterval: 0, idleTimeout: 0,
                receiveBufferSize: 64 << 10))
        self.client = client
        let connection = client.connect(host: target.host, port: target.port, path: target.path, handler: handler)
        connections.append(connection)
        return connection
    }

    /// Closes every connection of the case (1000) and forgets them. Loop only.
    func closeAll() {
        for connection in connections { connection.close(code: .normal, reason: "bench case done") }
        connections.removeAll()
    }
}

/// Where the load generator connects.
struct BenchTarget: Sendable {
    var host: String
    var port: Int
    var path: String
}
