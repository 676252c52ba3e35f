import CWebsockets
import DequeModule
import Foundation
import Logging

/// One WebSocket connection (server- or client-side), confined to its event loop's thread.
///
/// Outbound messages go into a queue; one frame (or one fragment of a large message) is
/// written per writable callback, with `LWS_PRE` headroom kept in front of each queued
/// frame so that no copy is needed at write time. Inbound chunks are reassembled into
/// whole messages, bounded by ``maximumMessageSize`` (beyond it the connection is closed
/// with 1009).
public final class WebSocketConnection {
    /// Which side of the connection this object is.
    public enum Role: Sendable, Hashable {
        /// Accepted by a ``WebSocketServer``.
        case server
        /// Opened by a ``WebSocketClient``.
        case client
    }

    /// Where the connection is in its life.
    public enum State: Sendable, Hashable {
        /// A client connection whose handshake has not finished.
        case connecting
        /// Open: messages flow both ways.
        case open
        /// A close was requested or received; the close handshake is under way.
        case closing
        /// Closed (or never opened).
        case closed
    }

    /// Per-connection limits and write sizes.
    public struct Limits: Sendable {
        /// The largest inbound message accepted (bytes); larger ones close with 1009.
        public var maximumMessageSize: Int
        /// Messages at least this large are written as several fragments of this size.
        public var fragmentSize: Int
        /// The largest frame that coalescing appends grow to (bytes).
        public var maximumCoalescedFrameSize: Int
        /// Server side: several queued small messages are framed by the transport and
        /// handed to the socket in one write of at most this many bytes (0 disables).
        public var maximumBatchSize: Int

        /// Creates limits; the defaults are 1 MiB messages, 64 KiB fragments, 64 KiB
        /// coalesced frames and 64 KiB write batches.
        public init(
            maximumMessageSize: Int = 1 << 20, fragmentSize: Int = 64 << 10,
            maximumCoalescedFrameSize: Int = 64 << 10, maximumBatchSize: Int = 64 << 10
        ) {
            self.maximumMessageSize = maximumMessageSize
            self.fragmentSize = min(max(fragmentSize, 1), 1 << 30)
            self.maximumCoalescedFrameSize = maximumCoalescedFrameSize
            self.maximumBatchSize = maximumBatchSize
        }
    }

    /// The bytes lws needs in front of a payload (`LWS_PRE`).
    static let headroom = Int(cws_lws_pre)
    private static var logger: Logger { Logger(label: "hub.transport.connection") }

    /// The loop the connection lives on.
    public let eventLoop: EventLoop
    /// Server- or client-side.
    public let role: Role
    /// A process-unique number, for logs.
    public let id: UInt64
    /// The request path of the upgrade request (for example `/`).
    public let requestPath: String
    /// The `Authorization` header of the upgrade request, if any (sent by a client,
    /// received by a server).
    public let authorization: String?
    /// The negotiated subprotocol (for example `hub.v1`), or `nil` when the client offered
    /// none. Known once the connection is open.
    public internal(set) var subprotocol: String?
    /// The limits this connection enforces.
    public let limits: Limits
    /// Receives the connection's events. Held strongly until the close event.
    public var handler: (any WebSocketConnectionHandler)?
    /// Where the connection is in its life.
    // @exclusivity(unchecked) on the hot fields below: this object is confined to its
    // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
    // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
    @exclusivity(unchecked) public private(set) var state: State
    /// Bytes queued and not yet handed to the socket (payloads, plus the frame headers of
    /// small server-side messages, which are framed when queued). The server bounds this.
    @exclusivity(unchecked) public private(set) var queuedBytes = 0
    /// Whether reading is paused with ``pauseReading()``.
    @exclusivity(unchecked) public private(set) var isReadingPaused = false

    /// Messages completely handed to the socket so far.
    @exclusivity(unchecked) public private(set) var messagesWritten = 0
    /// `lws_write` calls made so far (fewer than messages when small ones are batched).
    @exclusivity(unchecked) public private(set) var writeCalls = 0

    /// The number of frames waiting in the outbound queue.
    public var queuedFrameCount: Int { outbound.count }

    @exclusivity(unchecked) var wsi: OpaquePointer?
    /// Counted in its server's open connections.
    var isCounted = false
    /// Refused after accept (too many connections): no events reach a handler.
    var isRefused = false
    /// Whether a client connection was opened with TLS (for its error messages).
    var usesTLS = false
    var ownedCStrings: [UnsafeMutablePointer<CChar>] = []

    @exclusivity(unchecked) private var outbound = Deque<OutboundFrame>()
    @exclusivity(unchecked) private var receiveBuffer: [UInt8] = []
    @exclusivity(unchecked) private var receivingMessage = false
    @exclusivity(unchecked) private var receiveKind = WebSocketMessageKind.text
    private var pendingClose: (code: WebSocketCloseCode, reason: String, discard: Bool)?
    private var closeCode: WebSocketCloseCode?
    private var closeReason = ""
    @exclusivity(unchecked) private var writableRequested = false
    private var isAborting = false
    private var maskingKeys = [UInt32](repeating: 0, count: 64)
    private var maskingKeysLeft = 0
    @exclusivity(unchecked) private var finished = false

    init(eventLoop: EventLoop, role: Role, requestPath: String, authorization: String?, limits: Limits) {
        self.eventLoop = eventLoop
        self.role = role
        self.id = WebSocketConnection.nextID()
        self.requestPath = requestPath
        self.authorization = authorization
        self.limits = limits
        self.state = .connecting
    }

    deinit {
        for string in ownedCStrings { free(string) }
    }

    // MARK: - Sending

    /// Queues one message with a copy of `payload`. Returns `false` (and drops it) when the
    /// connection is closing or closed.
    @discardableResult
    public func send(_ payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) -> Bool {
        send(prefix: UnsafeRawBufferPointer(start: nil, count: 0), body: payload,
             suffix: UnsafeRawBufferPointer(start: nil, count: 0), kind: kind)
    }

    /// Queues one message with a copy of `bytes`.
    @discardableResult
    public func send<Bytes: Collection>(_ bytes: Bytes, kind: WebSocketMessageKind) -> Bool where Bytes.Element == UInt8 {
        if let sent = bytes.withContiguousStorageIfAvailable({ send(UnsafeRawBufferPointer($0), kind: kind) }) {
            return sent
        }
        return sendFrame(kind: kind) { storage in storage.append(contentsOf: bytes) }
    }

    /// Queues one message made of `prefix`, `body` and `suffix` (for example a per-
    /// subscription envelope around a value encoded once for every subscriber).
    ///
    /// A small message is appended, header and all (masked on the client side, with a key
    /// from the system's strong random source), to the tail of a preframed queue entry:
    /// no allocation of its own, one `lws_write` for many.
    @discardableResult
    public func send(
        prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer,
        kind: WebSocketMessageKind
    ) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard acceptsOutbound else { return false }
        let length = prefix.count + body.count + suffix.count
        guard limits.maximumBatchSize > 0, length < min(1 << 16, limits.fragmentSize) else {
            return sendFrame(kind: kind) { storage in
                storage.append(contentsOf: prefix)
                storage.append(contentsOf: body)
                storage.append(contentsOf: suffix)
            }
        }
        let masked = role == .client
        let headerLength = (length < 126 ? 2 : 4) + (masked ? 4 : 0)
        let key = masked ? nextMaskingKey() : nil
        // The tail entry is read and grown in place (one `_modify` access): reading a
        // queue entry through the subscript's getter would copy it, retaining its buffers,
        // once per message.
        let limit = limits.maximumBatchSize
        let appended = !outbound.isEmpty && WebSocketConnection.appendFrame(
            to: &outbound[outbound.count - 1], limit: limit, kind: kind, headerLength: headerLength,
            prefix: prefix, body: body, suffix: suffix, key: key)
        if !appended {
            var frame = OutboundFrame(storage: takeBuffer(), kind: kind, isPreframed: true, messageCount: 0)
            _ = WebSocketConnection.appendFrame(
                to: &frame, limit: .max, kind: kind, headerLength: headerLength,
                prefix: prefix, body: body, suffix: suffix, key: key)
            outbound.append(frame)
        }
        queuedBytes += headerLength + length
        requestWritable()
        return true
    }

    /// Appends one complete small frame to `frame` when it is an unwritten preframed entry
    /// with room for it under `limit`; returns whether it did.
    @inline(__always)
    private static func appendFrame(
        to frame: inout OutboundFrame, limit: Int, kind: WebSocketMessageKind, headerLength: Int,
        prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer, key: UInt32?
    ) -> Bool {
        let length = prefix.count + body.count + suffix.count
        guard frame.isPreframed, frame.written == 0, frame.payloadCount + headerLength + length <= limit else {
            return false
        }
        frame.messageCount += 1
        appendFrameHeader(to: &frame.storage, kind: kind, length: length, masked: key != nil)
        let payloadStart = frame.storage.count
        if let key {
            frame.storage.append(UInt8(truncatingIfNeeded: key >> 24))
            frame.storage.append(UInt8(truncatingIfNeeded: key >> 16))
            frame.storage.append(UInt8(truncatingIfNeeded: key >> 8))
            frame.storage.append(UInt8(truncatingIfNeeded: key))
        }
        frame.storage.append(contentsOf: prefix)
        frame.storage.append(contentsOf: body)
        frame.storage.append(contentsOf: suffix)
        if let key { mask(&frame.storage, from: payloadStart + 4, key: key) }
        return true
    }

    /// Appends a final WebSocket frame header for a payload under 64 KiB (with the mask
    /// bit for client frames; the key follows the header).
    private static func appendFrameHeader(to storage: inout [UInt8], kind: WebSocketMessageKind, length: Int, masked: Bool) {
        storage.append(0x80 | (kind == .text ? 0x1 : 0x2))
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            storage.append(maskBit | UInt8(length))
        } else {
            storage.append(maskBit | 126)
            storage.append(UInt8(truncatingIfNeeded: length >> 8))
            storage.append(UInt8(truncatingIfNeeded: length))
        }
    }

    /// Queues one text message.
    @discardableResult
    public func send(text: String) -> Bool {
        var text = text
        return text.withUTF8 { send(UnsafeRawBufferPointer($0), kind: .text) }
    }

    /// Queues one message whose payload `build` appends to `storage` (a recycled buffer
    /// that already holds the lws headroom: only append to it).
    @discardableResult
    public func sendFrame(kind: WebSocketMessageKind, _ build: (inout [UInt8]) -> Void) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard acceptsOutbound else { return false }
        var frame = OutboundFrame(storage: takeBuffer(), kind: kind)
        build(&frame.storage)
        queuedBytes += frame.payloadCount
        outbound.append(frame)
        requestWritable()
        return true
    }

    /// Appends one element to the message at the tail of the queue when that message is
    /// open under `key` (same kind, not yet being written, below the coalescing size
    /// limit); otherwise queues a new message under `key`, ending with `closing`.
    ///
    /// `append` receives the frame's storage (only append to it) and whether this element
    /// opens the message, so that it can write an opening (for example `{"op":"next",
    /// "id":1,"values":[`) or a separator. `closing` (for example `]}`) is added when
    /// the message is sealed, just before it is written. Many small messages become one
    /// `lws_write`.
    @discardableResult
    public func sendCoalescing(
        key: UInt64, kind: WebSocketMessageKind, closing: [UInt8] = [],
        _ append: (inout [UInt8], _ opensMessage: Bool) -> Void
    ) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard acceptsOutbound else { return false }
        // Read and grown in place (one `_modify` access, no copy of the entry).
        if !outbound.isEmpty {
            let limit = limits.maximumCoalescedFrameSize
            let grown = WebSocketConnection.appendElement(
                to: &outbound[outbound.count - 1], key: key, kind: kind, limit: limit, append)
            if grown >= 0 {
                queuedBytes += grown
                return true
            }
        }
        var frame = OutboundFrame(storage: takeBuffer(), kind: kind, coalescingKey: key, closing: closing)
        append(&frame.storage, true)
        queuedBytes += frame.payloadCount + closing.count
        outbound.append(frame)
        requestWritable()
        return true
    }

    /// Appends one element to `frame` when it is open under `key`; returns the bytes
    /// added, or -1 when the element needs a new message.
    @inline(__always)
    private static func appendElement(
        to frame: inout OutboundFrame, key: UInt64, kind: WebSocketMessageKind, limit: Int,
        _ append: (inout [UInt8], _ opensMessage: Bool) -> Void
    ) -> Int {
        guard frame.coalescingKey == key, frame.kind == kind, frame.written == 0, frame.payloadCount < limit else {
            return -1
        }
        let before = frame.storage.count
        append(&frame.storage, false)
        return frame.storage.count - before
    }

    /// XORs `storage[start...]` with the 32-bit masking `key` (RFC 6455 section 5.3),
    /// eight bytes at a time.
    private static func mask(_ storage: inout [UInt8], from start: Int, key: UInt32) {
        // Byte `i` of the key as sent on the wire (big-endian order of `key`).
        @inline(__always) func keyByte(_ index: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: key >> UInt32(24 - 8 * (index & 3)))
        }
        // The key repeated over eight bytes, in memory order whatever the endianness.
        var wideKey: UInt64 = 0
        withUnsafeMutableBytes(of: &wideKey) { bytes in
            for index in 0..<8 { bytes[index] = keyByte(index) }
        }
        storage.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            let payload = base + start
            let count = buffer.count - start
            var offset = 0
            while offset + 8 <= count {
                let word = payload.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                payload.storeBytes(of: word ^ wideKey, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            while offset < count {
                let byte = payload.load(fromByteOffset: offset, as: UInt8.self)
                payload.storeBytes(of: byte ^ keyByte(offset), toByteOffset: offset, as: UInt8.self)
                offset += 1
            }
        }
    }

    /// A fresh masking key from the system's strong random source, drawn 64 keys per
    /// `arc4random_buf` call.
    private func nextMaskingKey() -> UInt32 {
        if maskingKeysLeft == 0 {
            maskingKeys.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            maskingKeysLeft = maskingKeys.count
        }
        maskingKeysLeft -= 1
        return maskingKeys[maskingKeysLeft]
    }

    /// Closes the connection with `code` and `reason` (at most 123 bytes of UTF-8).
    ///
    /// Queued messages are written first unless `discardingQueued` is set (for example
    /// for a slow consumer). Messages sent afterwards are dropped. Calling it again does
    /// nothing, except that a call discarding the queue escalates a pending close that
    /// was waiting for the queue to drain (its code and reason replace the first ones).
    public func close(code: WebSocketCloseCode = .normal, reason: String = "", discardingQueued: Bool = false) {
        eventLoop.preconditionInEventLoop()
        if let pending = pendingClose {
            guard discardingQueued, !pending.discard, state != .closed else { return }
            pendingClose = (code, reason, true)
            dropQueuedExceptInProgress()
            requestWritable()
            return
        }
        guard state == .open || state == .connecting else { return }
        pendingClose = (code, reason, discardingQueued)
        if discardingQueued { dropQueuedExceptInProgress() }
        if state == .open {
            state = .closing
            requestWritable()
        }
    }

    /// Drops the connection at once, without a close handshake (the peer sees the TCP
    /// connection end). The close event follows with no code. For a peer that does not
    /// read even its close frame. A client connection still connecting is dropped as
    /// soon as its handshake completes.
    public func abort() {
        eventLoop.preconditionInEventLoop()
        guard state != .closed else { return }
        pendingClose = pendingClose ?? (.normal, "", true)
        dropQueuedExceptInProgress()
        isAborting = true
        if let wsi {
            state = .closing
            cws_kill_async(wsi)
        }
    }

    /// Stops reading from the socket (TCP back pressure reaches the peer).
    public func pauseReading() {
        eventLoop.preconditionInEventLoop()
        guard !isReadingPaused else { return }
        isReadingPaused = true
        if let wsi { lws_rx_flow_control(wsi, 0) }
    }

    /// Resumes reading after ``pauseReading()``.
    public func resumeReading() {
        eventLoop.preconditionInEventLoop()
        guard isReadingPaused else { return }
        isReadingPaused = false
        if let wsi { lws_rx_flow_control(wsi, 1) }
    }

    private var acceptsOutbound: Bool {
        pendingClose == nil && (state == .open || state == .connecting)
    }

    private func requestWritable() {
        guard !writableRequested, state == .open || state == .closing, let wsi else { return }
        writableRequested = true
        lws_callback_on_writable(wsi)
    }

    private func takeBuffer() -> [UInt8] {
        var buffer = eventLoop.takeBuffer()
        buffer.append(contentsOf: repeatElement(0, count: WebSocketConnection.headroom))
        return buffer
    }

    private func recycle(_ buffer: inout [UInt8]) {
        eventLoop.recycleBuffer(&buffer)
    }

    private func dropQueuedExceptInProgress() {
        while let last = outbound.last, last.written == 0 || outbound.count > 1 {
            outbound.removeLast()
        }
        queuedBytes = outbound.first.map { $0.payloadCount - $0.written } ?? 0
    }

    // MARK: - Events from the protocol callbacks

    /// The handshake finished on `wsi`.
    func didEstablish(_ wsi: OpaquePointer) {
        self.wsi = wsi
        state = .open
        if isAborting {
            state = .closing
            cws_kill_async(wsi)
            return
        }
        if isReadingPaused { lws_rx_flow_control(wsi, 0) }
        if pendingClose != nil { state = .closing }
        if !outbound.isEmpty || pendingClose != nil { requestWritable() }
    }

    /// Tells the handler the connection is open (after the server's delegate saw it).
    func notifyOpen() {
        guard state == .open || state == .closing else { return }
        handler?.connectionDidOpen(self)
    }

    /// One chunk of inbound payload. Returns nonzero to close.
    func handleReceive(_ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let wsi else { return -1 }
        let complete = lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0
        if !receivingMessage {
            receiveKind = lws_frame_is_binary(wsi) != 0 ? .binary : .text
            if complete {
                // The whole message is in this chunk: hand lws's buffer over without a copy.
                guard length <= limits.maximumMessageSize else { return refuseTooLarge(wsi) }
                deliver(UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
                return 0
            }
            receivingMessage = true
        }
        guard receiveBuffer.count + length <= limits.maximumMessageSize else { return refuseTooLarge(wsi) }
        if let input, length > 0 {
            receiveBuffer.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        if complete {
            receivingMessage = false
            receiveBuffer.withUnsafeBytes { deliver($0) }
            let keep = receiveBuffer.capacity <= 16 << 10
            receiveBuffer.removeAll(keepingCapacity: keep)
        }
        return 0
    }

    private func deliver(_ payload: UnsafeRawBufferPointer) {
        // Messages that arrive while the close handshake runs are still delivered.
        guard state == .open || state == .closing, !isRefused, let handler else { return }
        handler.connection(self, didReceive: payload, kind: receiveKind)
    }

    private func refuseTooLarge(_ wsi: OpaquePointer) -> Int32 {
        receiveBuffer = []
        receivingMessage = false
        sendCloseFrame(wsi, code: .messageTooBig, reason: "message too big")
        return -1
    }

    private func sendCloseFrame(_ wsi: OpaquePointer, code: WebSocketCloseCode, reason: String) {
        closeCode = code
        closeReason = reason
        state = .closing
        var bytes = Array(reason.utf8.prefix(123))
        bytes.withUnsafeMutableBufferPointer { buffer in
            cws_close_reason(wsi, Int32(code.rawValue), buffer.baseAddress, buffer.count)
        }
    }

    /// The socket can take one more write. Returns nonzero to close.
    func handleWritable() -> Int32 {
        writableRequested = false
        guard let wsi, !isAborting else { return -1 }
        if let close = pendingClose, close.discard || outbound.isEmpty {
            sendCloseFrame(wsi, code: close.code, reason: close.reason)
            return -1
        }
        guard !outbound.isEmpty else { return 0 }
        let head = outbound.startIndex
        if outbound[head].isPreframed {
            return writePreframed(wsi)
        }
        sealFrame(at: head)
        if role == .server, outbound.count > 1, limits.maximumBatchSize > 0, isBatchable(outbound[head]) {
            return writeBatch(wsi)
        }
        let total = outbound[head].payloadCount
        let written = outbound[head].written
        let fragmented = total >= limits.fragmentSize
        let chunk = fragmented ? min(limits.fragmentSize, total - written) : total
        let isEnd = written + chunk == total
        let initial = outbound[head].kind == .text ? cws_write_text : cws_write_binary
        let flags = fragmented ? cws_write_ws_flags(initial, written == 0 ? 1 : 0, isEnd ? 1 : 0) : initial
        let result = outbound[head].storage.withUnsafeMutableBufferPointer { buffer in
            cws_write(wsi, buffer.baseAddress! + WebSocketConnection.headroom + written, chunk, flags)
        }
        writeCalls += 1
        if result < chunk {
            WebSocketConnection.logger.debug("short write, closing", metadata: ["connection": "\(id)"])
            return -1
        }
        queuedBytes -= chunk
        if isEnd {
            messagesWritten += 1
            var frame = outbound.removeFirst()
            recycle(&frame.storage)
        } else {
            outbound[head].written += chunk
        }
        continueWritingOrReportDrained()
        return 0
    }

    /// After a successful write: asks for the next writable callback while frames or a close
    /// are left, else resets the queued byte count and tells the handler the queue drained.
    private func continueWritingOrReportDrained() {
        if !outbound.isEmpty || pendingClose != nil {
            requestWritable()
        } else {
            queuedBytes = 0
            handler?.connectionDidDrainOutbound(self)
        }
    }

    /// Seals a coalesced message: nothing more is appended once writing starts.
    private func sealFrame(at index: Int) {
        guard outbound[index].written == 0, outbound[index].coalescingKey != nil else { return }
        outbound[index].coalescingKey = nil
        if !outbound[index].closing.isEmpty {
            outbound[index].storage.append(contentsOf: outbound[index].closing)
            outbound[index].closing = []
        }
    }

    /// Whether `frame` can go in a batch: nothing of it written, small enough for a
    /// 16-bit length and one write.
    private func isBatchable(_ frame: OutboundFrame) -> Bool {
        !frame.isPreframed && frame.written == 0 && frame.payloadCount < min(limits.fragmentSize, 1 << 16)
    }

    /// Writes the preframed entry at the head of the queue raw, in one `lws_write`
    /// (LWS_WRITE_HTTP on a ws connection writes the bytes as they are; lws keeps what the
    /// socket does not take and holds back the next writable callback until it is sent).
    private func writePreframed(_ wsi: OpaquePointer) -> Int32 {
        let count = outbound[outbound.startIndex].payloadCount
        let result = outbound[outbound.startIndex].storage.withUnsafeMutableBufferPointer { buffer in
            cws_write(wsi, buffer.baseAddress! + WebSocketConnection.headroom, count, cws_write_http)
        }
        writeCalls += 1
        if result < count {
            WebSocketConnection.logger.debug("short write, closing", metadata: ["connection": "\(id)"])
            return -1
        }
        var frame = outbound.removeFirst()
        messagesWritten += frame.messageCount
        queuedBytes -= count
        recycle(&frame.storage)
        continueWritingOrReportDrained()
        return 0
    }

    /// Frames the leading small messages itself (server frames are unmasked) and hands
    /// them to lws in one raw write, so that many small messages cost one syscall and
    /// one writable callback. Returns nonzero to close.
    private func writeBatch(_ wsi: OpaquePointer) -> Int32 {
        var batch = eventLoop.takeWriteScratch()
        var frames = 0
        var payloadBytes = 0
        for index in outbound.indices {
            guard isBatchable(outbound[index]) else { break }
            let sealedLength = outbound[index].payloadCount + outbound[index].closing.count
            if frames > 0, batch.count + 4 + sealedLength > limits.maximumBatchSize { break }
            sealFrame(at: index)
            let frame = outbound[index]
            guard isBatchable(frame) else { break }
            let length = frame.payloadCount
            batch.append(0x80 | (frame.kind == .text ? 0x1 : 0x2))
            if length < 126 {
                batch.append(UInt8(length))
            } else {
                batch.append(126)
                batch.append(UInt8(truncatingIfNeeded: length >> 8))
                batch.append(UInt8(truncatingIfNeeded: length))
            }
            frame.storage.withUnsafeBufferPointer { buffer in
                batch.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[WebSocketConnection.headroom...]))
            }
            frames += 1
            payloadBytes += length
        }
        let count = batch.count
        // LWS_WRITE_HTTP on a ws connection is written as is (lws's raw path): the bytes
        // already are complete WebSocket frames.
        let result = batch.withUnsafeMutableBufferPointer { buffer in
            cws_write(wsi, buffer.baseAddress, count, cws_write_http)
        }
        eventLoop.returnWriteScratch(&batch)
        writeCalls += 1
        if result < count {
            WebSocketConnection.logger.debug("short batch write, closing", metadata: ["connection": "\(id)"])
            return -1
        }
        messagesWritten += frames
        for _ in 0..<frames {
            var frame = outbound.removeFirst()
            recycle(&frame.storage)
        }
        queuedBytes -= payloadBytes
        continueWritingOrReportDrained()
        return 0
    }

    /// The peer sent a close frame (`input`: big-endian code, then the reason).
    func handlePeerClose(_ input: UnsafeMutableRawPointer?, _ length: Int) {
        state = .closing
        guard closeCode == nil else { return }
        guard let input, length >= 2 else { return }
        let bytes = UnsafeRawBufferPointer(start: input, count: length)
        closeCode = WebSocketCloseCode(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        closeReason = String(decoding: bytes[2...], as: UTF8.self)
    }

    /// The connection closed (lws's CLOSED / CLIENT_CLOSED).
    func handleClosed() {
        finish()
    }

    /// A client connection failed before opening.
    func handleConnectionError(_ message: String) {
        guard !finished else { return }
        finished = true
        state = .closed
        wsi = nil
        releaseQueues()
        let error = TransportError(code: .connectionFailed, message: message)
        // Reported from the loop's queue so that it never arrives before connect() returns.
        eventLoop.executeSoon { [self] in
            let handler = self.handler
            self.handler = nil
            handler?.connection(self, didFailToConnect: error)
        }
    }

    /// lws is freeing the wsi: nothing reaches this object afterwards.
    func handleDestroyed() {
        if state == .connecting, role == .client {
            handleConnectionError("connection ended before the handshake finished")
        } else {
            finish()
        }
        wsi = nil
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        let wasOpen = state == .open || state == .closing
        state = .closed
        wsi = nil
        releaseQueues()
        let handler = self.handler
        self.handler = nil
        if wasOpen, !isRefused {
            handler?.connection(self, didCloseWith: closeCode, reason: closeReason)
        }
    }

    private func releaseQueues() {
        outbound.removeAll()
        receiveBuffer = []
        queuedBytes = 0
    }

    private static let counter = Counter()

    private static func nextID() -> UInt64 {
        counter.next()
    }
}

import Synchronization

/// A process-wide connection counter.
private final class Counter: Sendable {
    private let value = Atomic<UInt64>(0)
    func next() -> UInt64 { value.add(1, ordering: .relaxed).newValue }
}
