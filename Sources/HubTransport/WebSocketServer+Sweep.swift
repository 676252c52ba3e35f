import CWebsockets
import DequeModule
import Logging

// The once-a-second sweep: handshakes and closes past their deadlines, and every
// connection's keepalive.
extension WebSocketServer {
    /// Once a second: sockets that have waited too long for their request, and closing
    /// sockets past their deadline, are closed; then every open connection's keepalive
    /// advances (silent peers are pinged, those silent for the idle timeout hung up on:
    /// a flag test per connection).
    func sweep() {
        let now = EventLoop.monotonicNanoseconds()
        for wsi in pendingHandshakes.removeExpired(now: now) {
            timedOutHandshakeCount += 1
            cws_kill_sync(wsi)
        }
        for wsi in idleKeepAlive.removeExpired(now: now) {
            cws_kill_sync(wsi)
        }
        if !closing.isEmpty {
            var due: [OpaquePointer] = []
            for (key, socket) in closing {
                guard let deadline = socket.deadline else {
                    closing[key] = nil
                    continue
                }
                if deadline <= now, let wsi = socket.wsi { due.append(wsi) }
            }
            for wsi in due { cws_kill_sync(wsi) }
        }
        guard configuration.pingInterval > 0 else { return }
        for connection in connections.values where connection.isCounted {
            connection.keepaliveSecondPassed()
        }
    }
}
