import CWebsockets

/// The server's side of the WebSocket opening handshake (RFC 6455 §4.2): whether an
/// upgrade request is well-formed, the subprotocol to select, and the bytes of the
/// `101 Switching Protocols` answer or of the error that refuses it. Pure functions
/// (tested without sockets); SHA-1 and base64 come from libwebsockets.
enum WebSocketUpgrade {
    /// An accepted request: what the 101 answer carries.
    struct Accepted: Equatable {
        /// `Sec-WebSocket-Accept`.
        var acceptValue: String
        /// The selected subprotocol (`nil` when the client offered none).
        var subprotocol: String?
    }

    /// What an upgrade request gets.
    enum Outcome: Equatable {
        /// 101 with these values.
        case accept(Accepted)
        /// This error answer, then the socket closes.
        case refuse(HTTPResponse)
    }

    /// RFC 6455 §1.3's GUID, appended to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Checks `head` (an upgrade request) against §4.2.1 and selects `subprotocol` when the
    /// client offers it. Returns the answer to send, or the error response that refuses
    /// the handshake: 400 for a malformed request (not GET, not HTTP/1.1, no Host, a key
    /// that is not 16 bytes of base64, a body, subprotocols offered without ours), 426
    /// with `Sec-WebSocket-Version: 13` for another version.
    static func evaluate(_ head: HTTPRequestHead, subprotocol: String) -> Outcome {
        guard head.method == "GET" else { return .refuse(refusal(400, "a WebSocket upgrade must be a GET request")) }
        guard head.minorVersion >= 1 else {
            return .refuse(refusal(400, "a WebSocket upgrade needs HTTP/1.1"))
        }
        guard let host = head.header("host"), !host.isEmpty else {
            return .refuse(refusal(400, "a WebSocket upgrade needs a Host header"))
        }
        guard head.bodyFraming == .none else {
            return .refuse(refusal(400, "a WebSocket upgrade has no body"))
        }
        let versions = head.tokens("sec-websocket-version")
        guard versions == ["13"] else {
            var response = refusal(426, "only Sec-WebSocket-Version: 13 is supported")
            response.headers.append(.init("sec-websocket-version", "13"))
            return .refuse(response)
        }
        guard let key = head.header("sec-websocket-key"), decodedLength(ofBase64: key) == 16 else {
            return .refuse(refusal(400, "Sec-WebSocket-Key must be 16 bytes in base64"))
        }
        let offered = head.tokens("sec-websocket-protocol")
        var selected: String?
        if !offered.isEmpty {
            // Tokens are compared as sent (subprotocol names are case-sensitive), after trimming.
            let exact = head.headers.filter { $0.name == "sec-websocket-protocol" }
                .flatMap { $0.value.split(separator: ",").map { $0.trimmingBlanks() } }
            guard exact.contains(subprotocol) else {
                return .refuse(refusal(400, "none of the offered subprotocols is \(subprotocol)"))
            }
            selected = subprotocol
        }
        return .accept(Accepted(acceptValue: acceptValue(forKey: key), subprotocol: selected))
    }

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    static func acceptValue(forKey key: String) -> String {
        var input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        _ = input.withUnsafeMutableBufferPointer { bytes in
            digest.withUnsafeMutableBufferPointer { lws_SHA1(bytes.baseAddress, bytes.count, $0.baseAddress) }
        }
        var encoded = [CChar](repeating: 0, count: 32)
        let length = digest.withUnsafeBufferPointer { bytes in
            bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: 20) { source in
                lws_b64_encode_string(source, 20, &encoded, Int32(encoded.count))
            }
        }
        return String(decoding: encoded.prefix(Int(max(0, length))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bytes base64 `text` decodes to, or `nil` when it is not canonical base64.
    static func decodedLength(ofBase64 text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return nil }
        var padding = 0
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard padding == 0 else { return nil }
            case UInt8(ascii: "="):
                guard index >= bytes.count - 2 else { return nil }
                padding += 1
            default:
                return nil
            }
        }
        return bytes.count / 4 * 3 - padding
    }

    /// The `101 Switching Protocols` answer.
    static func switchingProtocols(_ accepted: Accepted) -> [UInt8] {
        var text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Accept: \(accepted.acceptValue)\r\n"
        if let subprotocol = accepted.subprotocol { text += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// An error answer that refuses a handshake, with a one-line explanation.
    static func refusal(_ status: Int, _ line: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [.init("cache-control", "no-store")], text: line + "\n")
    }
}
