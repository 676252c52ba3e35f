import DequeModule

/// A connection's outbound messages and the order and shape in which they are written:
/// a state machine with `mutating` transitions that say what to write next; the
/// connection performs the writes.
///
/// - Small messages are framed here, into the *preframed tail*: a buffer the queue keeps
///   outside its entries (grown in place, reused after each write, no allocation and no
///   entry copied per message), which leaves in one raw write. When something else is
///   queued behind it, or it is full, it becomes an entry of its own.
/// - Coalescing messages grow under a key until their first byte is written.
/// - Server side, several small unframed messages at the head are framed into one write
///   *batch*; every other message is written in fragments when large, framed by the
///   connection (server side) or by lws (client side).
struct OutboundQueue {
    /// What to write next.
    enum WriteStep: Equatable {
        /// Nothing is queued.
        case idle
        /// The head entry's complete frames: its first `byteCount` bytes after the headroom,
        /// written as they are.
        case preframed(byteCount: Int)
        /// Several small messages framed into one raw write (``encodeBatch(_:into:)``).
        case batch(BatchWrite)
        /// Part or all of the head message's payload, framed by lws.
        case payload(PayloadWrite)
    }

    /// The head messages that go in one batch.
    struct BatchWrite: Equatable {
        /// How many messages, from the head.
        var messageCount: Int
        /// Their payload bytes.
        var payloadBytes: Int
        /// The batch's length, frame headers included.
        var byteCount: Int
    }

    /// A write of the head message's payload that lws frames.
    struct PayloadWrite: Equatable {
        /// Where the bytes start in the payload.
        var offset: Int
        /// How many bytes.
        var count: Int
        /// Text or binary.
        var kind: WebSocketMessageKind
        /// Whether the message is written in several fragments.
        var isFragmented: Bool
        /// Whether this write starts the message.
        var isFirst: Bool { offset == 0 }
        /// Whether this write ends the message.
        var isLast: Bool
    }

    /// The sizes that decide framing, batching and coalescing.
    let limits: WebSocketConnection.Limits
    /// Whether preframed messages are masked (client side).
    let masks: Bool
    /// Whether unframed small messages at the head may be batched (server side).
    let batchesMessages: Bool

    /// The queued entries, oldest first; the preframed tail follows them.
    private(set) var entries = Deque<OutboundFrame>()
    /// The open preframed tail: `LWS_PRE` bytes of headroom (once it has a buffer), then
    /// complete frames of ``tailMessages`` small messages, behind every entry.
    private var tail: [UInt8] = []
    /// Messages in the preframed tail (0: the tail is empty).
    private(set) var tailMessages = 0
    /// Bytes queued and not yet written (payloads, plus the headers of preframed frames).
    private(set) var queuedBytes = 0
    /// Messages completely written so far.
    private(set) var messagesWritten = 0
    /// A tail buffer with more capacity than this is handed back to the pool once written
    /// (an idle connection keeps no large buffer).
    static let keptTailCapacity = 16 << 10

    /// A queue for a connection of `role` with `limits`.
    init(limits: WebSocketConnection.Limits, role: WebSocketConnection.Role) {
        self.limits = limits
        self.masks = role == .client
        self.batchesMessages = role == .server
    }

    /// The number of entries (the preframed tail counts as one when it holds messages).
    var count: Int { entries.count + (tailMessages > 0 ? 1 : 0) }
    /// Whether nothing is queued.
    var isEmpty: Bool { entries.isEmpty && tailMessages == 0 }

    // MARK: - Queueing

    /// Queues one message made of `prefix`, `body` and `suffix`. A small one is framed
    /// into the preframed tail (which takes a buffer from `newBuffer()` when it has none,
    /// and becomes an entry of its own when it cannot take the message), masked with
    /// `maskingKey()` client side; a larger one becomes an entry of its own.
    @inline(__always)
    mutating func append(
        kind: WebSocketMessageKind, prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer,
        suffix: UnsafeRawBufferPointer, maskingKey: () -> UInt32, newBuffer: () -> [UInt8]
    ) {
        let length = prefix.count + body.count + suffix.count
        guard limits.maximumBatchSize > 0, length < min(1 << 16, limits.fragmentSize) else {
            var frame = OutboundFrame(buffer: newBuffer(), kind: kind)
            frame.storage.append(contentsOf: prefix)
            frame.storage.append(contentsOf: body)
            frame.storage.append(contentsOf: suffix)
            append(frame)
            return
        }
        appendToTail(
            opcode: FrameHeader.opcode(kind), prefix: prefix, body: body, suffix: suffix, maskingKey: maskingKey,
            newBuffer: newBuffer)
    }

    /// Queues a ping carrying `payload` (at most 125 bytes, a control frame's limit)
    /// behind everything queued, in the preframed tail, so that it never falls between a
    /// message's fragments; masked client side. It counts as a message written.
    mutating func appendPing(payload: [UInt8], maskingKey: () -> UInt32, newBuffer: () -> [UInt8]) {
        Array(payload.prefix(125)).withUnsafeBytes { payload in
            let empty = UnsafeRawBufferPointer(start: nil, count: 0)
            appendToTail(
                opcode: FrameHeader.pingOpcode, prefix: payload, body: empty, suffix: empty, maskingKey: maskingKey,
                newBuffer: newBuffer)
        }
    }

    /// Frames one message into the preframed tail (sealing it first when the message
    /// would take it past the batch size; taking a buffer when it has none).
    @inline(__always)
    private mutating func appendToTail(
        opcode: UInt8, prefix: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer,
        maskingKey: () -> UInt32, newBuffer: () -> [UInt8]
    ) {
        let length = prefix.count + body.count + suffix.count
        let key = masks ? maskingKey() : nil
        let framedLength = FrameHeader.length(payloadLength: length, masked: masks) + length
        if tailMessages > 0, tail.count - OutboundFrame.headroom + framedLength > limits.maximumBatchSize {
            sealTail()
        }
        if tail.isEmpty {
            tail = newBuffer()
            tail.append(contentsOf: repeatElement(0, count: OutboundFrame.headroom))
        }
        OutboundFrame.appendFrame(
            to: &tail, opcode: opcode, prefix: prefix, body: body, suffix: suffix, maskingKey: key)
        tailMessages += 1
        queuedBytes += framedLength
    }

    /// Moves the preframed tail's messages into an entry of their own (something else is
    /// queued behind them, or the tail is full).
    private mutating func sealTail() {
        guard tailMessages > 0 else { return }
        entries.append(OutboundFrame(preframed: tail, messageCount: tailMessages))
        tail = []
        tailMessages = 0
    }

    /// Queues `frame` (one message whose payload follows the headroom) as it is.
    mutating func append(_ frame: OutboundFrame) {
        sealTail()
        queuedBytes += frame.payloadCount
        entries.append(frame)
    }

    /// Appends one element to the coalescing message at the tail when it is open under
    /// `key` (same kind, not being written, below the coalescing limit); otherwise queues a
    /// new message in `newBuffer()` under `key`, ending with `closing` once sealed.
    /// `append` receives the storage (append only) and whether the element opens the
    /// message. Returns whether a new entry was queued.
    @inline(__always)
    mutating func appendCoalescing(
        key: UInt64, kind: WebSocketMessageKind, closing: [UInt8], newBuffer: () -> [UInt8],
        _ append: (inout [UInt8], _ opensMessage: Bool) -> Void
    ) -> Bool {
        // Read and grown in place (one `_modify` access, no copy of the entry).
        if tailMessages == 0, !entries.isEmpty {
            let grown = entries[entries.count - 1].appendElement(
                key: key, kind: kind, limit: limits.maximumCoalescedFrameSize, append)
            if grown >= 0 {
                queuedBytes += grown
                return false
            }
        }
        sealTail()
        var frame = OutboundFrame(buffer: newBuffer(), kind: kind, coalescingKey: key, closing: closing)
        append(&frame.storage, true)
        queuedBytes += frame.payloadCount + closing.count
        entries.append(frame)
        return true
    }

    /// Drops every entry but one already partly written (whose rest must still go out for
    /// the stream of frames to stay valid).
    mutating func dropQueuedExceptInProgress() {
        dropTail()
        while let last = entries.last, last.written == 0 || entries.count > 1 {
            entries.removeLast()
        }
        queuedBytes = entries.first.map { $0.payloadCount - $0.written } ?? 0
    }

    /// Drops everything (the connection ended).
    mutating func removeAll() {
        entries.removeAll()
        tail = []
        tailMessages = 0
        queuedBytes = 0
    }

    /// Empties the preframed tail, keeping a small buffer for the next messages.
    private mutating func dropTail() {
        tailMessages = 0
        if tail.capacity > OutboundQueue.keptTailCapacity {
            tail = []
        } else if tail.count > OutboundFrame.headroom {
            tail.removeSubrange(OutboundFrame.headroom...)
        }
    }

    // MARK: - Writing

    /// What to write now. Seals the head message when it was coalescing (its first
    /// byte is about to be written).
    mutating func nextStep() -> WriteStep {
        guard !entries.isEmpty else {
            return tailMessages > 0 ? .preframed(byteCount: tail.count - OutboundFrame.headroom) : .idle
        }
        let head = entries.startIndex
        if entries[head].isPreframed {
            return .preframed(byteCount: entries[head].payloadCount)
        }
        entries[head].seal()
        if batchesMessages, entries.count > 1, limits.maximumBatchSize > 0,
            entries[head].isBatchable(below: limits.fragmentSize)
        {
            return .batch(planBatch())
        }
        let total = entries[head].payloadCount
        let written = entries[head].written
        let fragmented = total >= limits.fragmentSize
        let count = fragmented ? min(limits.fragmentSize, total - written) : total
        return .payload(PayloadWrite(
            offset: written, count: count, kind: entries[head].kind, isFragmented: fragmented,
            isLast: written + count == total))
    }

    /// The leading batchable messages that fit in one batch (the first always does),
    /// sealing those that were coalescing.
    private mutating func planBatch() -> BatchWrite {
        var batch = BatchWrite(messageCount: 0, payloadBytes: 0, byteCount: 0)
        for index in entries.indices {
            guard entries[index].isBatchable(below: limits.fragmentSize) else { break }
            let sealedLength = entries[index].payloadCount + entries[index].closing.count
            if batch.messageCount > 0, batch.byteCount + 4 + sealedLength > limits.maximumBatchSize { break }
            entries[index].seal()
            guard entries[index].isBatchable(below: limits.fragmentSize) else { break }
            let length = entries[index].payloadCount
            batch.messageCount += 1
            batch.payloadBytes += length
            batch.byteCount += FrameHeader.length(payloadLength: length, masked: false) + length
        }
        return batch
    }

    /// Frames the messages of `batch` (unmasked: batches are server side) into `scratch`.
    func encodeBatch(_ batch: BatchWrite, into scratch: inout [UInt8]) {
        for index in entries.indices.prefix(batch.messageCount) {
            let length = entries[index].payloadCount
            FrameHeader.append(to: &scratch, kind: entries[index].kind, payloadLength: length)
            entries[index].storage.withUnsafeBufferPointer { buffer in
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[OutboundFrame.headroom...]))
            }
        }
    }

    /// Gives access to the head entry's bytes after the headroom (for writing them): the
    /// preframed tail's when no entry is before it.
    mutating func withHeadPayload<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        guard !entries.isEmpty else {
            return tail.withUnsafeMutableBytes { buffer in
                body(UnsafeMutableRawBufferPointer(rebasing: buffer[OutboundFrame.headroom...]))
            }
        }
        return entries[entries.startIndex].storage.withUnsafeMutableBytes { buffer in
            body(UnsafeMutableRawBufferPointer(rebasing: buffer[OutboundFrame.headroom...]))
        }
    }

    /// Gives access to the head entry's whole storage, headroom included (to write a
    /// frame header in front of a payload piece). There must be an entry.
    mutating func withHeadStorage<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        entries[entries.startIndex].storage.withUnsafeMutableBytes(body)
    }

    /// `step` was written completely: drops what it wrote, recycling the buffers into
    /// `pool`. Returns whether the queue is empty now.
    mutating func complete(_ step: WriteStep, pool: inout BufferPool) -> Bool {
        switch step {
        case .idle:
            break
        case .preframed(let byteCount) where entries.isEmpty:
            messagesWritten += tailMessages
            queuedBytes -= byteCount
            if tail.capacity > OutboundQueue.keptTailCapacity { pool.recycle(&tail) }
            dropTail()
        case .preframed(let byteCount):
            var frame = entries.removeFirst()
            messagesWritten += frame.messageCount
            queuedBytes -= byteCount
            pool.recycle(&frame.storage)
        case .batch(let batch):
            for _ in 0..<batch.messageCount {
                var frame = entries.removeFirst()
                pool.recycle(&frame.storage)
            }
            messagesWritten += batch.messageCount
            queuedBytes -= batch.payloadBytes
        case .payload(let write):
            queuedBytes -= write.count
            if write.isLast {
                messagesWritten += 1
                var frame = entries.removeFirst()
                pool.recycle(&frame.storage)
            } else {
                entries[entries.startIndex].written += write.count
            }
        }
        if isEmpty { queuedBytes = 0 }
        return isEmpty
    }
}
