import HubValue

/// The payload of a close frame (RFC 6455 §5.5.1): a big-endian status code and a UTF-8
/// reason, both optional. Reads a peer's (checking what §7.4 and §8.1 require) and
/// shortens this side's reason to what a control frame holds.
enum CloseFramePayload: Equatable {
    /// A close frame that may be answered with its code (`nil`: it carried none).
    case valid(WebSocketCloseCode?, String)
    /// A close frame that breaks the RFC: answer it with this code instead.
    case invalid(WebSocketCloseCode, String)

    /// Reads a peer's close payload: one byte, a code no peer may send (1005, 5000, ...)
    /// is a protocol error (1002), a reason that is not UTF-8 an invalid payload (1007).
    static func parse(_ payload: UnsafeRawBufferPointer) -> CloseFramePayload {
        guard !payload.isEmpty else { return .valid(nil, "") }
        guard payload.count >= 2 else { return .invalid(.protocolError, "close payload of one byte") }
        let code = WebSocketCloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnTheWire else { return .invalid(.protocolError, "invalid close code \(code.rawValue)") }
        let reason = UnsafeRawBufferPointer(rebasing: payload[2...])
        guard UTF8Validation.isValid(reason) else { return .invalid(.invalidPayload, "close reason is not UTF-8") }
        return .valid(code, String(decoding: reason, as: UTF8.self))
    }

    /// Reads a peer's close payload (see ``parse(_:)-(UnsafeRawBufferPointer)``).
    static func parse(_ payload: [UInt8]) -> CloseFramePayload {
        payload.withUnsafeBytes { parse($0) }
    }

    /// `reason` as UTF-8, at most 123 bytes (a control frame's 125 less the code), cut
    /// at a scalar boundary so that it stays valid UTF-8.
    static func truncatedReason(_ reason: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in reason.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard bytes.count + encoded.count <= 123 else { break }
            bytes += encoded
        }
        return bytes
    }
}
