/// The `next` message of one subscription around values encoded once for every
/// subscriber (PROTOCOL.md §4): `{"op":"next","id":N,"value":` ``head``, the
/// value's compact JSON, ``tail``; or in the batch form
/// `{"op":"next","id":N,"values":[` ``batchHead``, the values separated by
/// ``batchSeparator``, ``batchTail``.
///
/// This is the one definition of the envelope: ``ServerMessage/encode(into:)``
/// writes `next` with it, and the server's remote subscribers copy ``head`` and
/// ``tail`` straight into the connection's queue around the value's cached JSON,
/// so the two are byte-identical by construction.
public struct NextEnvelope: Sendable {
    /// The subscription id.
    public let id: UInt64
    /// `{"op":"next","id":N,"value":`.
    public let head: [UInt8]

    /// `}`: what follows the value.
    public static let tail: [UInt8] = [UInt8(ascii: "}")]
    /// `,`: between two values of a batch.
    public static let batchSeparator = UInt8(ascii: ",")
    /// `]}`: what ends a batch.
    public static let batchTail: [UInt8] = [UInt8(ascii: "]"), UInt8(ascii: "}")]

    /// The envelope of subscription `id`.
    public init(id: UInt64) {
        self.id = id
        var head: [UInt8] = []
        NextEnvelope.appendHead(id: id, to: &head)
        self.head = head
    }

    /// Appends `{"op":"next","id":N,"value":`.
    @inline(__always)
    public static func appendHead(id: UInt64, to buffer: inout [UInt8]) {
        WireBytes.append(#"{"op":"next","id":"#, to: &buffer)
        WireBytes.append(id, to: &buffer)
        WireBytes.append(#","value":"#, to: &buffer)
    }

    /// Appends `{"op":"next","id":N,"values":[`.
    @inline(__always)
    public static func appendBatchHead(id: UInt64, to buffer: inout [UInt8]) {
        WireBytes.append(#"{"op":"next","id":"#, to: &buffer)
        WireBytes.append(id, to: &buffer)
        WireBytes.append(#","values":["#, to: &buffer)
    }

    /// Appends the batch head of this subscription.
    @inline(__always)
    public func appendBatchHead(to buffer: inout [UInt8]) {
        NextEnvelope.appendBatchHead(id: id, to: &buffer)
    }

    /// Appends the whole `next` of one value from its compact JSON `encodedValue`
    /// (as ``Value/writeJSON(into:)`` writes it).
    public func append(encodedValue: UnsafeRawBufferPointer, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: head)
        buffer.append(contentsOf: encodedValue)
        buffer.append(contentsOf: NextEnvelope.tail)
    }

    /// Appends the whole batch `next` of the compact JSON of each value (`[UInt8]`,
    /// `ArraySlice<UInt8>`, ...); `encodedValues` should not be empty (the protocol
    /// requires at least one value).
    public func appendBatch<Values: Sequence>(encodedValues: Values, to buffer: inout [UInt8])
    where Values.Element: Sequence, Values.Element.Element == UInt8 {
        appendBatchHead(to: &buffer)
        var first = true
        for encoded in encodedValues {
            if !first { buffer.append(NextEnvelope.batchSeparator) }
            first = false
            buffer.append(contentsOf: encoded)
        }
        buffer.append(contentsOf: NextEnvelope.batchTail)
    }
}
