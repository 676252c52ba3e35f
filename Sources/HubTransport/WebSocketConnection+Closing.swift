import CWebsockets
import HubValue
import Logging

// The end of a connection: the peer's close frame (checked against RFC 6455, refused
// when it breaks it), lws's closed and destroyed callbacks, connection errors, and the
// last event a handler hears.
extension WebSocketConnection {
    /// The peer sent a close frame (`input`: big-endian code, then the reason), client
    /// side (lws's `WS_PEER_INITIATED_CLOSE`).
    ///
    /// A close frame that breaks RFC 6455 §5.5.1/§7.4 (a one-byte payload, a code no
    /// peer may send such as 1005 or 5000) is not echoed: lws is given 1002 as this
    /// side's close reason and told to close (returns nonzero), so that it answers with
    /// that close frame.
    func handlePeerClose(_ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        let payload = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        switch CloseFramePayload.parse(payload) {
        case .valid(let code, let reason):
            handshake.peerClosed(code: code, reason: reason)
            return 0
        case .invalid(let code, let reason):
            return refuseClose(code, reason)
        }
    }

    /// Answers an invalid close frame with `code` and `reason` (and records them as how
    /// the connection ended); returns what lws must be told (close).
    func refuseClose(_ code: WebSocketCloseCode, _ reason: String) -> Int32 {
        logger.debug("invalid close frame from the peer", metadata: ["reason": "\(reason)"])
        handshake.peerClosed(code: code, reason: reason)
        if let wsi {
            var bytes = CloseFramePayload.truncatedReason(reason)
            lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code.rawValue)), &bytes, bytes.count)
        }
        return -1
    }

    /// The connection closed (lws's CLOSED / CLIENT_CLOSED).
    func handleClosed() {
        end(handshake.closed())
    }

    /// lws is freeing the wsi: nothing reaches this object afterwards.
    func handleDestroyed() {
        end(handshake.destroyed(role: role), failure: "connection ended before the handshake finished")
        wsi = nil
    }

    /// A client connection failed before opening, as lws explains it (`lwsMessage`).
    func handleConnectionError(lwsMessage: String) {
        handleConnectionError(WebSocketClient.explainConnectionFailure(lwsMessage, usesTLS: usesTLS))
    }

    /// A client connection failed before opening.
    func handleConnectionError(_ message: String) {
        end(handshake.failedToConnect(), failure: message)
    }

    func end(_ ending: CloseHandshake.Ending, failure: String = "") {
        guard ending != .alreadyEnded else { return }
        wsi = nil
        outbound.removeAll()
        inbound.reset()
        pendingInput = []
        pendingPong = nil
        switch ending {
        case .alreadyEnded:
            break
        case .closed, .endedUnopened:
            let handler = self.handler
            self.handler = nil
            if ending == .closed, !isRefused {
                handler?.connection(self, didCloseWith: handshake.code, reason: handshake.reason)
            }
        case .failedToConnect:
            let error = TransportError(code: .connectionFailed, message: failure)
            // Reported from the loop's queue so that it never arrives before connect() returns.
            eventLoop.executeSoon { [self] in
                let handler = self.handler
                self.handler = nil
                handler?.connection(self, didFailToConnect: error)
            }
        }
    }
}
