import HubTransport
import Synchronization

/// One ``WebSocketClient`` per event loop, shared by every ``HubClient`` on that
/// loop (each WebSocketClient is a libwebsockets vhost: 200 clients on one loop
/// need one, not 200).
enum SharedTransport {
    private final class WeakClient: @unchecked Sendable {
        weak var client: WebSocketClient?
        init(_ client: WebSocketClient) { self.client = client }
    }

    private static let clients = Mutex<[ObjectIdentifier: WeakClient]>([:])

    /// The loop's shared client, made with `configuration` if there is none yet. Loop thread only.
    static func client(on eventLoop: EventLoop, configuration: WebSocketClient.Configuration) -> WebSocketClient {
        eventLoop.preconditionInEventLoop()
        let key = ObjectIdentifier(eventLoop)
        return clients.withLock { clients in
            if let existing = clients[key]?.client, existing.eventLoop === eventLoop {
                return existing
            }
            clients = clients.filter { $0.value.client != nil }
            let client = WebSocketClient(eventLoop: eventLoop, configuration: configuration)
            clients[key] = WeakClient(client)
            return client
        }
    }
}
