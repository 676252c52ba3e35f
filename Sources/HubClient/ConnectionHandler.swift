import HubTransport

/// Routes one connection's events to the core, tagged with the attempt they belong to.
final class ConnectionHandler: WebSocketConnectionHandler {
    let core: ClientCore
    let generation: UInt64

    init(core: ClientCore, generation: UInt64) {
        self.core = core
        self.generation = generation
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        core.didOpen(connection, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        core.didReceive(payload, kind: kind, from: connection, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        core.didClose(code: code, reason: reason, generation: generation)
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        core.didFailToConnect(error, generation: generation)
    }
}
