import HubValue

/// Field readers shared by the client and server message decoders.
enum WireFields {
    /// 2^53 − 1, the largest id and ack magnitude of the protocol.
    static let maxSafeInteger: Int64 = 9_007_199_254_740_991

    /// The integer value of a JSON number: an `int`, or a `double` whose value
    /// is integral and fits in `Int64` (`2.0`, `1e2`); `nil` otherwise.
    @inline(__always)
    static func integer(_ value: Value) -> Int64? {
        switch value {
        case let .int(i): return i
        case let .double(d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// A subscription id: an integer with 1 ≤ id ≤ 2^53−1.
    @inline(__always)
    static func id(_ value: Value?) -> UInt64? {
        guard let value, let i = integer(value), i >= 1, i <= maxSafeInteger else { return nil }
        return UInt64(i)
    }

    /// An ack: an integer with −(2^53−1) ≤ ack ≤ 2^53−1.
    @inline(__always)
    static func ack(_ value: Value) -> Int64? {
        guard let i = integer(value), i >= -maxSafeInteger, i <= maxSafeInteger else { return nil }
        return i
    }

    /// A demand count: `"unlimited"`, or an integral number ≥ `minimum`; a count
    /// ≥ 2^53−1 (including integral doubles beyond `Int64`) is `.unlimited`.
    static func demand(_ value: Value, minimum: Int64) -> WireDemand? {
        switch value {
        case let .string(s):
            return s == "unlimited" ? .unlimited : nil
        case let .int(i):
            guard i >= minimum else { return nil }
            return i >= maxSafeInteger ? .unlimited : .max(Int(i))
        case let .double(d):
            guard d.isFinite, d.rounded(.towardZero) == d, d >= Double(minimum) else { return nil }
            if d >= Double(maxSafeInteger) { return .unlimited }
            return .max(Int(d))
        default:
            return nil
        }
    }

    static let idRange = "an integer from 1 to 9007199254740991"
    static let ackRange = "an integer from -9007199254740991 to 9007199254740991"
    static let demandRule = "an integer ≥ 0 or \"unlimited\""
    static let nRule = "an integer ≥ 1 or \"unlimited\""

    /// A `bad_message` error.
    @inline(__always)
    static func bad(_ message: String) -> HubError {
        HubError(.badMessage, message)
    }

    /// The JSON of a short value, or its type name, for error messages.
    static func brief(_ value: Value) -> String {
        let text = value.jsonString()
        return text.utf8.count <= 40 ? text : value.typeDescription
    }

    // MARK: - Message entry points

    /// Parses the JSON of one text message and decodes the parsed value with `decode`; the
    /// entry point shared by ``ClientMessage`` and ``ServerMessage``. The bytes are only read
    /// during the call. A parse error is a `bad_message` "`notJSON`: <parser message>".
    @inline(__always)
    static func decodeMessage<Message>(
        _ bytes: UnsafeRawBufferPointer, notJSON: String,
        _ decode: (Value) throws(WireError) -> Message
    ) throws(WireError) -> Message {
        let value: Value
        do throws(JSONError) {
            value = try Value.parse(bytes)
        } catch {
            throw WireError(bad("\(notJSON): \(error.message)"))
        }
        return try decode(value)
    }

    /// ``decodeMessage(_:notJSON:_:)`` over the bytes of an array.
    static func decodeMessage<Message>(
        _ bytes: [UInt8], notJSON: String,
        _ decode: (Value) throws(WireError) -> Message
    ) throws(WireError) -> Message {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WireError) -> Message in try decodeMessage(buffer, notJSON: notJSON, decode) }
        }
        return try result.get()
    }

    /// ``decodeMessage(_:notJSON:_:)`` over the UTF-8 of a JSON text.
    static func decodeMessage<Message>(
        _ text: String, notJSON: String,
        _ decode: (Value) throws(WireError) -> Message
    ) throws(WireError) -> Message {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(WireError) -> Message in
                try decodeMessage(UnsafeRawBufferPointer(utf8), notJSON: notJSON, decode)
            }
        }
        return try result.get()
    }
}
