import CWebsockets

/// A server or a client, as the one libwebsockets callback dispatcher sees it: the events
/// that concern the endpoint as well as the connection. Loop thread only.
protocol WebSocketEndpoint: AnyObject {
    /// The loop the endpoint runs on.
    var eventLoop: EventLoop { get }

    /// The opening handshake of `connection` finished (clients: lws's ws client role).
    func established(_ connection: WebSocketConnection, wsi: OpaquePointer)

    /// lws reports `connection` closed (clients).
    func closed(_ connection: WebSocketConnection)

    /// lws frees `connection`'s wsi: nothing reaches it afterwards (clients).
    func destroyed(_ connection: WebSocketConnection)

    /// lws created `wsi` for an accepted socket (servers), before it sent anything.
    /// Returns whether the endpoint keeps track of it: then ``requestArrived(_:)`` and
    /// ``freed(_:)`` reach this endpoint for `wsi`.
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

    /// Opens the connection and tells its handler.
    func established(_ connection: WebSocketConnection, wsi: OpaquePointer) {
        connection.didEstablish(wsi)
        connection.notifyOpen()
    }

    /// Ends the connection.
    func closed(_ connection: WebSocketConnection) {
        connection.handleClosed()
    }

    /// Forgets the connection.
    func destroyed(_ connection: WebSocketConnection) {
        connection.handleDestroyed()
    }
}

/// What a vhost's protocol `user` pointer points at: its endpoint (a class box, since an
/// existential cannot travel through `Unmanaged`). Kept alive by the loop's arena.
final class EndpointReference {
    let endpoint: any WebSocketEndpoint

    init(_ endpoint: any WebSocketEndpoint) {
        self.endpoint = endpoint
    }
}
