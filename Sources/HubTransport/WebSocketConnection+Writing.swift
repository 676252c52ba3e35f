import CWebsockets
import HubValue
import Logging

// A connection's writes: the queue at the end of a pass or from writable callbacks,
// one step at a time (a frame header and payload, or a preframed batch), and the
// control frames a server connection writes itself (pongs, close frames).
extension WebSocketConnection {
    /// The socket can take one more write. Returns nonzero to close.
    func handleWritable() -> Int32 {
        writableRequested = false
        guard let wsi else { return -1 }
        if framesItself {
            // Failed, or waiting for the peer's close: nothing more to write.
            if hasFailed || closeFrameSent { return handshake.isAborting ? -1 : 0 }
        }
        let action = handshake.writable(queueIsEmpty: outbound.isEmpty)
        guard action == .write else { return closeWith(wsi, action) }
        if framesItself, !writePendingPong(wsi) { return -1 }
        // Callbacks may come unrequested (or after lws sent the rest of our last write).
        if outbound.isEmpty {
            handler?.connectionDidDrainOutbound(self)
            return 0
        }
        guard writeNextStep(wsi) else { return -1 }
        // The queue went out whole and a close waits for it: the close frame follows in
        // the same callback (a peer that reacts to the last messages by closing itself
        // would otherwise often close first, with its own code).
        if outbound.isEmpty, handshake.pending != nil, lws_partial_buffered(wsi) == 0 {
            let next = handshake.writable(queueIsEmpty: true)
            if next != .write { return closeWith(wsi, next) }
        }
        // lws asks for a writable callback itself when it kept part of the write: say so,
        // so that nothing newer is written before that part.
        if !outbound.isEmpty || handshake.pending != nil || lws_partial_buffered(wsi) != 0 {
            requestWritable()
        } else {
            handler?.connectionDidDrainOutbound(self)
        }
        return 0
    }

    /// Performs a close `action` from a writable callback; returns what lws must be told.
    /// A client connection has lws send the close frame and close (nonzero). A server
    /// connection writes its close frame and waits for the peer's (closing the socket at
    /// it, or at the deadline), or closes at once when aborting.
    func closeWith(_ wsi: OpaquePointer, _ action: CloseHandshake.WritableAction) -> Int32 {
        guard framesItself else {
            sendCloseFrame(wsi, action)
            return -1
        }
        guard case .sendClose(let code, let reason) = action else { return -1 }
        if !closeFrameSent { writeCloseFrame(wsi, code: code, reason: reason) }
        socket?.setDeadline(seconds: ServerSocket.closeAcknowledgementSeconds)
        return 0
    }

    /// Writes what is queued now, outside a writable callback: the loop calls it at the end
    /// of a service pass (or after a few passes of input, see ``EventLoop/Configuration/
    /// writeCoalescingDelay``), so that every message queued meanwhile leaves in one write,
    /// without a round trip through `poll` for `POLLOUT`. Only when the socket does not
    /// take everything (lws then keeps the rest and asks for `POLLOUT` itself), or a close
    /// is due, does the rest wait for a writable callback.
    func flush() {
        flushScheduled = false
        guard let wsi, !writableRequested, handshake.isEstablished else { return }
        if framesItself {
            guard !hasFailed, !closeFrameSent else { return }
            if pendingPong != nil, lws_partial_buffered(wsi) == 0, !writePendingPong(wsi) {
                abort()
                return
            }
        }
        // A close is due after the queue: a writable callback writes both (see handleWritable).
        if handshake.pending != nil {
            requestWritable()
            return
        }
        // lws still holds part of an earlier write: it must go first, from a writable callback.
        if lws_partial_buffered(wsi) != 0 {
            requestWritable()
            return
        }
        var steps = 0
        while handshake.writesQueued(queueIsEmpty: outbound.isEmpty) {
            guard writeNextStep(wsi) else {
                // lws cannot take the write (the socket failed): close at its next pass.
                abort()
                return
            }
            steps += 1
            if lws_partial_buffered(wsi) != 0 || steps == WebSocketConnection.stepsPerFlush { break }
        }
        if !outbound.isEmpty || handshake.pending != nil || lws_partial_buffered(wsi) != 0 || pendingPong != nil {
            requestWritable()
        } else {
            handler?.connectionDidDrainOutbound(self)
        }
    }

    /// The most writes one connection makes per flush (each up to a batch, 64 KiB by
    /// default): the rest waits for a writable callback, so one connection with a deep
    /// queue does not hold up the loop.
    static let stepsPerFlush = 4

    /// Writes the queue's next step (one `lws_write`). Returns `false` when lws failed.
    func writeNextStep(_ wsi: OpaquePointer) -> Bool {
        let step = outbound.nextStep()
        let expected: Int
        let result: Int32
        switch step {
        case .idle:
            return true
        case .preframed(let count):
            // Complete frames already: written as they are (LWS_WRITE_HTTP on a client's
            // ws connection is lws's raw path; lws keeps what the socket does not take and
            // holds back the next writable callback until it is sent).
            expected = count
            result = outbound.withHeadPayload { cws_write(wsi, $0.baseAddress, count, cws_write_raw) }
        case .batch(let batch):
            var scratch = eventLoop.buffers.takeScratch()
            outbound.encodeBatch(batch, into: &scratch)
            expected = batch.byteCount
            result = scratch.withUnsafeMutableBufferPointer { cws_write(wsi, $0.baseAddress, batch.byteCount, cws_write_raw) }
            eventLoop.buffers.returnScratch(&scratch)
        case .payload(let write) where framesItself:
            // The frame header goes in the bytes before this piece: the headroom, or the
            // part of the payload written already (lws sent or copied it).
            let opcode = write.isFirst ? FrameHeader.opcode(write.kind) : 0
            let headerLength = FrameHeader.length(payloadLength: write.count, masked: false)
            expected = headerLength + write.count
            result = outbound.withHeadStorage { storage in
                let start = OutboundFrame.headroom + write.offset - headerLength
                FrameHeader.write(
                    into: storage.baseAddress! + start, fin: write.isLast, opcode: opcode, payloadLength: write.count)
                return cws_write(wsi, storage.baseAddress! + start, expected, cws_write_raw)
            }
        case .payload(let write):
            let initial = write.kind == .text ? cws_write_text : cws_write_binary
            let flags = write.isFragmented
                ? cws_write_ws_flags(initial, write.isFirst ? 1 : 0, write.isLast ? 1 : 0) : initial
            expected = write.count
            result = outbound.withHeadPayload { cws_write(wsi, $0.baseAddress! + write.offset, write.count, flags) }
        }
        writeCalls += 1
        bytesWritten &+= expected
        if result < expected {
            logger.debug("short write, closing", metadata: ["connection": "\(id)"])
            return false
        }
        _ = outbound.complete(step, pool: &eventLoop.buffers)
        return true
    }

    /// Sends the close frame `action` asks for (with the next lws write: the caller
    /// returns -1), or nothing when it is an abort.
    func sendCloseFrame(_ wsi: OpaquePointer, _ action: CloseHandshake.WritableAction) {
        guard case .sendClose(let code, let reason) = action else { return }
        var bytes = CloseFramePayload.truncatedReason(reason)
        bytes.withUnsafeMutableBufferPointer { buffer in
            cws_close_reason(wsi, Int32(code.rawValue), buffer.baseAddress, buffer.count)
        }
    }


    /// Writes a close frame carrying `code` (none when `nil`) and `reason` (at most 123
    /// bytes of UTF-8, cut at a scalar boundary).
    func writeCloseFrame(_ wsi: OpaquePointer, code: WebSocketCloseCode?, reason: String) {
        closeFrameSent = true
        var frame: [UInt8] = [0x88, 0]
        if let code {
            frame.append(UInt8(code.rawValue >> 8))
            frame.append(UInt8(code.rawValue & 0xFF))
            frame.append(contentsOf: CloseFramePayload.truncatedReason(reason))
        }
        frame[1] = UInt8(frame.count - 2)
        _ = writeRaw(wsi, frame)
    }

    /// Writes the pong that answers the latest ping, if one is due.
    func writePendingPong(_ wsi: OpaquePointer) -> Bool {
        guard let payload = pendingPong else { return true }
        pendingPong = nil
        return writeRaw(wsi, [0x8A, UInt8(payload.count)] + payload)
    }

    /// Hands `bytes` to lws as they are; `false` when the socket failed.
    func writeRaw(_ wsi: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        var bytes = bytes
        let written = bytes.withUnsafeMutableBufferPointer { cws_write(wsi, $0.baseAddress, $0.count, cws_write_raw) }
        writeCalls += 1
        bytesWritten &+= bytes.count
        return written >= bytes.count
    }

    /// Has the pending pong written at the end of the pass (or the next writable callback).
    func scheduleControlWrite() {
        if writableRequested { return }
        guard !flushScheduled, handshake.isEstablished, wsi != nil else { return }
        flushScheduled = true
        eventLoop.scheduleFlush(self)
    }
}
