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
}

extension WebSocketEndpoint {
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
}

/// What a vhost's protocol `user` pointer points at: its endpoint (a class box, since an
/// existential cannot travel through `Unmanaged`). Kept alive by the loop's arena.
final class EndpointReference {
    let endpoint: any WebSocketEndpoint

    init(_ endpoint: any WebSocketEndpoint) {
        self.endpoint = endpoint
    }
}
