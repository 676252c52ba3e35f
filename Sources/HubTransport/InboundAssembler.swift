/// Reassembles a connection's inbound chunks (lws hands over at most its receive buffer
/// size at a time, and messages may be fragmented) into whole messages, refusing any
/// larger than the limit: a state machine whose transitions say what to deliver.
struct InboundAssembler {
    /// What a chunk leads to.
    enum Outcome: Equatable {
        /// The chunk is a whole message: deliver it as it is (no copy).
        case deliverChunk
        /// The chunk completed a message: deliver ``takeMessage()``.
        case deliverAssembled
        /// The message continues in later chunks.
        case awaitMore
        /// The message exceeds ``maximumMessageSize``: close with 1009. The partial
        /// message is dropped.
        case tooLarge
    }

    /// The largest message accepted (bytes).
    let maximumMessageSize: Int
    /// Assembled buffers at most this large are kept for the next message.
    static let keptCapacity = 16 << 10

    private var buffer: [UInt8] = []
    private var inMessage = false
    /// The kind of the message being received (or just completed).
    private(set) var kind = WebSocketMessageKind.text

    init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Whether a message is partly received.
    var isReceiving: Bool { inMessage }

    /// One chunk of inbound payload. `isBinary` is read at a message's first chunk;
    /// `completesMessage` says that lws has no more of the message.
    mutating func receive(
        _ chunk: UnsafeRawBufferPointer, isBinary: @autoclosure () -> Bool, completesMessage: Bool
    ) -> Outcome {
        if !inMessage {
            kind = isBinary() ? .binary : .text
            if completesMessage {
                guard chunk.count <= maximumMessageSize else {
                    reset()
                    return .tooLarge
                }
                return .deliverChunk
            }
            inMessage = true
        }
        guard buffer.count + chunk.count <= maximumMessageSize else {
            reset()
            return .tooLarge
        }
        if !chunk.isEmpty { buffer.append(contentsOf: chunk) }
        guard completesMessage else { return .awaitMore }
        inMessage = false
        return .deliverAssembled
    }

    /// The message just assembled (after ``Outcome/deliverAssembled``); give it back with
    /// ``recycle(_:)`` once delivered.
    mutating func takeMessage() -> [UInt8] {
        var message: [UInt8] = []
        swap(&message, &buffer)
        return message
    }

    /// Takes back a delivered message's buffer, keeping its capacity when small.
    mutating func recycle(_ message: inout [UInt8]) {
        guard message.capacity <= InboundAssembler.keptCapacity, buffer.isEmpty else { return }
        message.removeAll(keepingCapacity: true)
        swap(&message, &buffer)
    }

    /// Drops any partial message and its buffer.
    mutating func reset() {
        buffer = []
        inMessage = false
    }
}
