import CWebsockets

/// The one libwebsockets protocol callback of every WebSocket vhost, servers' and
/// clients' alike: it finds the endpoint (through the protocol's `user`, an
/// ``EndpointReference``) and what the per-session slot holds (an unretained pointer: a
/// server's ``ServerSocket``, in lws's raw-skt role, or a client's
/// ``WebSocketConnection``, in lws's ws client role) and forwards the event.
enum WebSocketCallbackDispatcher {
    /// The protocol table of `endpoint`'s vhosts: one protocol named `name`, served by
    /// the dispatcher, with a per-session slot for the connection. lws points at the
    /// endpoint from now on: the loop keeps it alive until it shuts down.
    ///
    /// lws hands at most `tx_packet_size` bytes to the socket per write and copies the
    /// rest aside (sending it on later writable events); it is set to the largest write
    /// `limits` make (a batch or a fragment), so that one write is one `send`.
    static func protocolTable(
        for endpoint: some WebSocketEndpoint, on eventLoop: EventLoop, name: String, receiveBufferSize: Int,
        limits: WebSocketConnection.Limits
    ) -> UnsafeMutablePointer<lws_protocols> {
        let reference = EndpointReference(endpoint)
        eventLoop.retainUntilShutdown(reference)
        eventLoop.retainUntilShutdown(endpoint)
        return eventLoop.arena.protocolTable(
            name: name, callback: cwsWebSocketCallback, user: Unmanaged.passUnretained(reference).toOpaque(),
            perSessionDataSize: MemoryLayout<UnsafeMutableRawPointer?>.size,
            receiveBufferSize: max(receiveBufferSize, 128),
            transmitChunkSize: max(limits.maximumBatchSize, limits.fragmentSize) + 64)
    }

    /// Stores `connection` in the per-session `slot`.
    static func attach(_ connection: WebSocketConnection, to slot: UnsafeMutableRawPointer) {
        slot.storeBytes(of: Unmanaged.passUnretained(connection).toOpaque(), as: UnsafeMutableRawPointer?.self)
    }

    /// Stores `socket` in the per-session `slot`.
    static func attach(_ socket: ServerSocket, to slot: UnsafeMutableRawPointer) {
        slot.storeBytes(of: Unmanaged.passUnretained(socket).toOpaque(), as: UnsafeMutableRawPointer?.self)
    }

    /// Forwards one lws event; returns what lws expects (nonzero closes or refuses).
    static func dispatch(
        _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
        _ input: UnsafeMutableRawPointer?, _ length: Int
    ) -> Int32 {
        // lws services a context on the thread of the loop that owns it, and only there.
        if let wsi { EventLoop.assertOwnerThread(of: wsi) }
        switch reason {
        case LWS_CALLBACK_RAW_RX:
            guard let wsi, let socket = socket(wsi, user) else { return -1 }
            socket.eventLoop.noteInput()
            return socket.receive(input, length)
        case LWS_CALLBACK_RAW_WRITEABLE:
            guard let wsi, let socket = socket(wsi, user) else { return -1 }
            socket.eventLoop.noteActivity()
            return socket.writable()
        case LWS_CALLBACK_RAW_ADOPT:
            // A server's socket, accepted or handed over, in the raw-skt role.
            guard let wsi, let user, let server = endpoint(wsi) as? WebSocketServer else { return -1 }
            server.eventLoop.noteActivity()
            return server.adopted(wsi, slot: user)
        case LWS_CALLBACK_RAW_CLOSE:
            guard let wsi, let socket = socket(wsi, user) else { return 0 }
            socket.eventLoop.noteActivity()
            socket.closed()
            return 0
        case LWS_CALLBACK_CLIENT_RECEIVE:
            guard let wsi, let connection = connection(wsi, user) else { return -1 }
            connection.eventLoop.noteInput()
            return connection.handleReceive(wsi, input, length)
        case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
            guard let wsi, let connection = connection(wsi, user) else { return 0 }
            connection.handlePong()
            return 0
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let wsi, let connection = connection(wsi, user) else { return -1 }
            connection.eventLoop.noteActivity()
            return connection.handleWritable()
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            return 0
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            // `input` is the accepted socket's descriptor; `wsi` the listener's.
            guard let wsi, let server = endpoint(wsi) as? WebSocketServer else { return 0 }
            return server.distribute(accepted: Int32(truncatingIfNeeded: Int(bitPattern: input)), listener: wsi)
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            guard let wsi, let input, let connection = connection(wsi, user) else { return 0 }
            return connection.appendHandshakeHeaders(wsi, cursor: input, space: length)
        case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
            // The server's handshake headers are readable here: note the selected subprotocol.
            if let wsi, let connection = connection(wsi, user) {
                connection.subprotocol = header(wsi, WSI_TOKEN_PROTOCOL)
            }
            return 0
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            guard let wsi, let endpoint = endpoint(wsi), let connection = connection(wsi, user) else { return -1 }
            connection.eventLoop.noteActivity()
            endpoint.established(connection, wsi: wsi)
            return 0
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            // Nonzero: the close frame breaks RFC 6455 and is answered with the close
            // reason set (1002) instead of being echoed.
            guard let wsi, let connection = connection(wsi, user) else { return 0 }
            return connection.handlePeerClose(input, length)
        case LWS_CALLBACK_CLIENT_CLOSED:
            guard let wsi, let connection = connection(wsi, user) else { return 0 }
            connection.eventLoop.noteActivity()
            if let endpoint = endpoint(wsi) {
                endpoint.closed(connection)
            } else {
                connection.handleClosed()
            }
            return 0
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            guard let wsi, let connection = connection(wsi, user) else { return 0 }
            connection.eventLoop.noteActivity()
            let message = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error"
            connection.handleConnectionError(lwsMessage: message)
            return 0
        case LWS_CALLBACK_WSI_CREATE:
            if let wsi, let reference = endpointReference(wsi), reference.endpoint.accepted(wsi) {
                reference.endpoint.eventLoop.acceptors[wsi] = reference
            }
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            guard let wsi else { return 0 }
            EventLoop.owning(wsi)?.acceptors.removeValue(forKey: wsi)?.endpoint.freed(wsi)
            guard let slot = user ?? lws_wsi_user(wsi), let raw = slot.load(as: UnsafeMutableRawPointer?.self) else {
                return 0
            }
            slot.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
            let endpoint = endpoint(wsi)
            if let server = endpoint as? WebSocketServer {
                server.socketFreed(Unmanaged<ServerSocket>.fromOpaque(raw).takeUnretainedValue())
                return 0
            }
            let connection = Unmanaged<WebSocketConnection>.fromOpaque(raw).takeUnretainedValue()
            if let endpoint {
                endpoint.destroyed(connection)
            } else {
                connection.handleDestroyed()
            }
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// The server socket in `wsi`'s per-session slot (`user`, or the wsi's user space).
    @inline(__always)
    private static func socket(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> ServerSocket? {
        guard let slot = user ?? lws_wsi_user(wsi), let raw = slot.load(as: UnsafeMutableRawPointer?.self) else {
            return nil
        }
        return Unmanaged<ServerSocket>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The connection in `wsi`'s per-session slot (`user`, or the wsi's user space).
    @inline(__always)
    private static func connection(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> WebSocketConnection? {
        guard let slot = user ?? lws_wsi_user(wsi) else { return nil }
        return connection(in: slot)
    }

    @inline(__always)
    private static func connection(in slot: UnsafeMutableRawPointer) -> WebSocketConnection? {
        guard let raw = slot.load(as: UnsafeMutableRawPointer?.self) else { return nil }
        return Unmanaged<WebSocketConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The endpoint whose vhost protocol `wsi` is bound to.
    private static func endpoint(_ wsi: OpaquePointer) -> (any WebSocketEndpoint)? {
        endpointReference(wsi)?.endpoint
    }

    private static func endpointReference(_ wsi: OpaquePointer) -> EndpointReference? {
        guard let proto = lws_get_protocol(wsi), let raw = proto.pointee.user else { return nil }
        return Unmanaged<EndpointReference>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The peer's address of `wsi` (for logs), if lws knows it.
    static func peer(_ wsi: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        guard let name = lws_get_peer_simple(wsi, &buffer, buffer.count) else { return nil }
        let text = String(cString: name)
        return text.isEmpty ? nil : text
    }

    /// The value of the handshake header `token` on `wsi`, if present.
    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token)
        guard copied >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The C entry point: a top-level non-capturing function, as lws requires.
private func cwsWebSocketCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    WebSocketCallbackDispatcher.dispatch(wsi, reason, user, input, length)
}
