import CWebsockets

/// A server or a client, as the one libwebsockets callback dispatcher sees it: the events
/// that concern the endpoint as well as the connection. Loop thread only.
protocol WebSocketEndpoint: AnyObject {
    /// The loop the endpoint runs on.
    var eventLoop: EventLoop { get }

    /// An upgrade request arrived (servers): create its connection and store it in `slot`,
    /// the per-session data; return nonzero to refuse the handshake.
    func filter(_ wsi: OpaquePointer, slot: UnsafeMutableRawPointer) -> Int32

    /// The opening handshake of `connection` finished.
    func established(_ connection: WebSocketConnection, wsi: OpaquePointer)

    /// lws reports `connection` closed.
    func closed(_ connection: WebSocketConnection)

    /// lws frees `connection`'s wsi: nothing reaches it afterwards.
    func destroyed(_ connection: WebSocketConnection)

    /// A plain HTTP event on `wsi` (servers): a request, its body, a writable callback
    /// or the close. Returns what lws expects (nonzero closes).
    func http(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32

    /// lws frees `wsi`, a plain HTTP connection (servers).
    func httpConnectionDestroyed(_ wsi: OpaquePointer)

    /// lws created `wsi` for an accepted socket (servers), before it sent anything.
    /// Returns whether the endpoint keeps track of it: then ``requestArrived(_:)`` and
    /// ``freed(_:)`` reach this endpoint for `wsi`, even after lws bound it to another.
    func accepted(_ wsi: OpaquePointer) -> Bool

    /// `wsi`, which this endpoint accepted, sent its upgrade or HTTP request.
    func requestArrived(_ wsi: OpaquePointer)

    /// lws frees `wsi`, which this endpoint accepted, whatever it became.
    func freed(_ wsi: OpaquePointer)
}

extension WebSocketEndpoint {
    /// Nothing to track: clients do not accept sockets.
    func accepted(_ wsi: OpaquePointer) -> Bool { false }

    /// Nothing: clients do not accept sockets.
    func requestArrived(_ wsi: OpaquePointer) {}

    /// Nothing: clients do not accept sockets.
    func freed(_ wsi: OpaquePointer) {}

    /// Refuses: only servers accept connections.
    func filter(_ wsi: OpaquePointer, slot: UnsafeMutableRawPointer) -> Int32 { 1 }

    /// Opens the connection and tells its handler.
    func established(_ connection: WebSocketConnection, wsi: OpaquePointer) {
        connection.didEstablish(wsi)
        connection.notifyOpen()
    }

    /// Ends the connection.
    func closed(_ connection: WebSocketConnection) {
        connection.handleClosed()
    }

    /// lws's default HTTP handling (clients serve no HTTP).
    func http(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        lws_callback_http_dummy(wsi, reason, nil, input, length)
    }

    /// Nothing to forget.
    func httpConnectionDestroyed(_ wsi: OpaquePointer) {}
}

/// What a vhost's protocol `user` pointer points at: its endpoint (a class box, since an
/// existential cannot travel through `Unmanaged`). Kept alive by the loop's arena.
final class EndpointReference {
    let endpoint: any WebSocketEndpoint

    init(_ endpoint: any WebSocketEndpoint) {
        self.endpoint = endpoint
    }
}
