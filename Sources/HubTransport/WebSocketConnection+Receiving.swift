import CWebsockets
import HubValue
import Logging

// What reaches a connection from lws: its handshake done, a client's payload chunks
// (lws parses a client connection's frames), and a server connection's raw bytes,
// parsed into frames here (pings answered, fragments assembled, close frames taken).
extension WebSocketConnection {
    // MARK: - Events from the callback dispatcher

    /// The handshake finished on `wsi`.
    func didEstablish(_ wsi: OpaquePointer) {
        // Every later lws call on `wsi` comes from a method that checks it runs on this
        // connection's loop: that loop must own the wsi's context.
        assert(EventLoop.owning(wsi) === eventLoop, "a connection was given a wsi of another event loop's context")
        self.wsi = wsi
        switch handshake.established() {
        case .kill:
            cws_kill_async(wsi)
            eventLoop.requestLibWebSocketsService()
        case .open(let closePending):
            if isReadingPaused { lws_rx_flow_control(wsi, 0) }
            if closePending || !outbound.isEmpty { requestWritable() }
        }
    }

    /// Tells the handler the connection is open (after the server's delegate saw it).
    func notifyOpen() {
        guard handshake.isEstablished else { return }
        handler?.connectionDidOpen(self)
    }

    /// One chunk of inbound payload. Returns nonzero to close.
    func handleReceive(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard self.wsi != nil else { return -1 }
        let chunk = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        bytesReceived &+= chunk.count
        keepalive?.peerWasHeard()
        let outcome = inbound.receive(
            chunk, isBinary: lws_frame_is_binary(wsi) != 0,
            completesMessage: lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0)
        switch outcome {
        case .awaitMore:
            break
        case .deliverChunk:
            // The whole message is in this chunk: hand lws's buffer over without a copy.
            guard isWellFormed(chunk) else { return refuseMalformedText(wsi) }
            deliver(chunk)
        case .deliverAssembled:
            guard deliverAssembled() else { return refuseMalformedText(wsi) }
        case .tooLarge:
            sendCloseFrame(wsi, handshake.closeNow(code: .messageTooBig, reason: "message too big"))
            return -1
        }
        return 0
    }

    // MARK: - The raw socket (server connections)

    /// Bytes read from the socket after the upgrade. Returns nonzero to close it now.
    func receive(raw buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        guard let wsi, !hasFailed else { return 0 }
        keepalive?.peerWasHeard()
        if isReadingPaused || !pendingInput.isEmpty {
            pendingInput.append(contentsOf: buffer)
            return 0
        }
        return parseFrames(buffer, wsi)
    }

    /// Parses the frames in `buffer` (unmasking them in place) and acts on them, until
    /// the bytes run out, reading is paused (the rest waits), or the connection ends.
    func parseFrames(_ buffer: UnsafeMutableRawBufferPointer, _ wsi: OpaquePointer) -> Int32 {
        var offset = 0
        while true {
            if isReadingPaused {
                if offset < buffer.count { pendingInput.append(contentsOf: buffer[offset...]) }
                return 0
            }
            switch frames.next(buffer, &offset) {
            case .needMore:
                return 0
            case .data(let start, let count, let kind, let endsMessage):
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
                bytesReceived &+= count
                switch inbound.receive(chunk, isBinary: kind == .binary, completesMessage: endsMessage) {
                case .awaitMore:
                    break
                case .deliverChunk:
                    guard isWellFormed(chunk) else {
                        fail(.invalidPayload, "text message is not UTF-8")
                        return 0
                    }
                    deliver(chunk)
                case .deliverAssembled:
                    guard deliverAssembled() else {
                        fail(.invalidPayload, "text message is not UTF-8")
                        return 0
                    }
                case .tooLarge:
                    fail(.messageTooBig, "message too big")
                    return 0
                }
            case .control(let opcode, let payload):
                switch opcode {
                case 0x9:
                    // A pong answers the latest ping (RFC 6455 §5.5.3): a flood costs one.
                    pendingPong = payload
                    scheduleControlWrite()
                case 0x8:
                    return receivedClose(payload, wsi)
                default:
                    break  // a pong: the peer was heard
                }
            case .failure(let code, let reason):
                fail(code, reason)
                return 0
            }
            if hasFailed || handshake.isAborting || self.wsi == nil { return 0 }
        }
    }

    /// Parses what was read while reading was paused (after ``resumeReading()``).
    func parsePendingInput() {
        guard !isReadingPaused, let wsi else { return }
        var input: [UInt8] = []
        swap(&input, &pendingInput)
        let result = input.withUnsafeMutableBytes { parseFrames($0, wsi) }
        if result != 0 {
            cws_kill_async(wsi)
            eventLoop.requestLibWebSocketsService()
            return
        }
        if !isReadingPaused, self.wsi != nil { lws_rx_flow_control(wsi, 1) }
    }

    /// The peer's close frame (`payload`: big-endian code, then the reason). A valid one is
    /// answered with the same code (or acknowledges this side's close) and the socket
    /// closes (returns -1); one that breaks RFC 6455 §5.5.1/§7.4 is answered with 1002,
    /// a reason that is not UTF-8 with 1007.
    func receivedClose(_ payload: [UInt8], _ wsi: OpaquePointer) -> Int32 {
        frames.stop()
        switch CloseFramePayload.parse(payload) {
        case .invalid(let code, let reason):
            logger.debug("invalid close frame from the peer", metadata: ["reason": "\(reason)"])
            fail(code, reason)
            return 0
        case .valid(let code, let reason):
            handshake.peerClosed(code: code, reason: reason)
            guard let socket else {
                if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: "") }
                return -1
            }
            if !closeFrameSent {
                // The answer echoes the code; what was queued is dropped (the peer reads no
                // more). It is written just before the socket closes, among the few its
                // loop closes a pass (``WebSocketServer/closeSoon(_:)``), not in this
                // callback: when thousands of peers close together, one pass reads
                // thousands of close frames, and a write each (through TLS, an
                // encryption each) would make that pass as long.
                outbound.removeAll()
                pendingPong = nil
                closeFrameSent = true
                closeAnswer = code
            }
            socket.closeAfterHandshake()
            return 0
        }
    }

    /// Writes the answer to the peer's close frame, deferred until its socket closes
    /// (``receivedClose(_:_:)``).
    func writeDeferredCloseAnswer() {
        guard let code = closeAnswer, let wsi else { return }
        closeAnswer = nil
        writeCloseFrame(wsi, code: code, reason: "")
    }

    /// Fails the connection (RFC 6455 §7.1.7): the close frame with `code` goes out
    /// before anything still queued, nothing more is read or delivered, and the socket
    /// closes once the peer has seen the frame (``ServerSocket/beginLingering()``).
    func fail(_ code: WebSocketCloseCode, _ reason: String) {
        guard !hasFailed, let wsi else { return }
        hasFailed = true
        frames.stop()
        logger.debug("closing a connection that broke RFC 6455", metadata: [
            "connection": "\(id)", "peer": "\(peer ?? "-")", "code": "\(code.rawValue)", "reason": "\(reason)",
        ])
        _ = handshake.closeNow(code: code, reason: reason)
        outbound.removeAll()
        pendingPong = nil
        inbound.reset()
        if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: reason) }
        socket?.connectionLingers()
    }

    /// The peer answered a ping.
    func handlePong() {
        keepalive?.peerWasHeard()
    }

    /// A second of the server's keepalive sweep: pings a silent peer, hangs up on one
    /// silent for the idle timeout.
    func keepaliveSecondPassed() {
        guard handshake.isEstablished, handshake.pending == nil, let action = keepalive?.secondPassed() else { return }
        switch action {
        case .none:
            break
        case .ping:
            outbound.appendPing(
                payload: Keepalive.pingPayload, maskingKey: { masking.nextKey() }, newBuffer: { eventLoop.buffers.take() })
            scheduleFlush()
        case .hangUp:
            logger.info("no answer to pings: hanging up", metadata: [
                "connection": "\(id)", "peer": "\(peer ?? "-")", "silentSeconds": "\(keepalive?.silentSeconds ?? 0)",
            ])
            abort()
        }
    }

    /// Whether a complete inbound message may be delivered: binary, or text that is
    /// well-formed UTF-8 (when the loop checks it: ``EventLoop/Configuration/validatesUTF8``).
    /// Delivers the message the assembler completed and recycles its buffer; false,
    /// delivering nothing, when it is text that is not UTF-8.
    func deliverAssembled() -> Bool {
        var message = inbound.takeMessage()
        let wellFormed = message.withUnsafeBytes { bytes in
            guard isWellFormed(bytes) else { return false }
            deliver(bytes)
            return true
        }
        inbound.recycle(&message)
        return wellFormed
    }

    func isWellFormed(_ message: UnsafeRawBufferPointer) -> Bool {
        inbound.kind != .text || !validatesText || UTF8Validation.isValid(message)
    }

    /// Closes with 1007 (RFC 6455 §8.1) after a text message that is not UTF-8.
    func refuseMalformedText(_ wsi: OpaquePointer) -> Int32 {
        logger.debug("a text message that is not UTF-8: closing with 1007", metadata: [
            "connection": "\(id)", "peer": "\(peer ?? "-")",
        ])
        sendCloseFrame(wsi, handshake.closeNow(code: .invalidPayload, reason: "text message is not UTF-8"))
        return -1
    }

    func deliver(_ payload: UnsafeRawBufferPointer) {
        // Messages that arrive while the close handshake runs are still delivered.
        guard handshake.isEstablished, !isRefused, let handler else { return }
        handler.connection(self, didReceive: payload, kind: inbound.kind)
    }
}
