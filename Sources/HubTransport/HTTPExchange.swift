import CWebsockets

/// One plain HTTP request on a server's port and its answer, confined to the loop.
///
/// The server hands it to its delegate (``WebSocketServerDelegate/server(_:didReceive:)``),
/// which calls ``respond(_:)`` once, at once or later on the loop (for example after
/// collecting figures from other loops). The response goes out in separate writes, as
/// libwebsockets wants: the status line and headers first, then the body in chunks of
/// at most ``bodyChunkSize`` bytes, each on its own writable callback. A request whose
/// connection closes before the answer is simply dropped (``isOpen`` turns false).
public final class HTTPExchange {
    /// The request.
    public let request: HTTPRequest
    /// The largest body write (bytes).
    static let bodyChunkSize = 16 << 10

    private enum Phase {
        /// Waiting for the request body to finish arriving.
        case receivingBody
        /// Waiting for ``respond(_:)``.
        case awaitingResponse
        /// The response is set: the headers go out on the next writable callback.
        case sendingHeaders(HTTPResponse)
        /// The headers are out; the body from `offset` on goes next.
        case sendingBody(HTTPResponse, offset: Int)
        /// The response is out (or the connection closed).
        case finished
    }

    private var wsi: OpaquePointer?
    private var phase: Phase
    private let eventLoop: EventLoop

    init(request: HTTPRequest, wsi: OpaquePointer, eventLoop: EventLoop, expectsBody: Bool) {
        assert(EventLoop.owning(wsi) === eventLoop, "an HTTP exchange was given a wsi of another event loop's context")
        self.request = request
        self.wsi = wsi
        self.eventLoop = eventLoop
        phase = expectsBody ? .receivingBody : .awaitingResponse
    }

    /// Whether the connection is still there and the response not yet sent.
    public var isOpen: Bool {
        guard wsi != nil else { return false }
        if case .finished = phase { return false }
        return true
    }

    /// Whether the request still waits for its body.
    var isReceivingBody: Bool {
        if case .receivingBody = phase { return true }
        return false
    }

    /// Answers the request (loop thread only; once: later calls are ignored). For a
    /// `HEAD` request only the headers are sent.
    public func respond(_ response: HTTPResponse) {
        eventLoop.preconditionInEventLoop()
        switch phase {
        case .awaitingResponse, .receivingBody:
            phase = .sendingHeaders(response)
            if let wsi { lws_callback_on_writable(wsi) }
        case .sendingHeaders, .sendingBody, .finished:
            return
        }
    }

    /// The body finished arriving: the request may be answered.
    func bodyCompleted() {
        if case .receivingBody = phase { phase = .awaitingResponse }
    }

    /// The connection closed: nothing more is written.
    func connectionClosed() {
        wsi = nil
        phase = .finished
    }

    /// The connection can take one write: the headers, or the next piece of the body.
    /// Returns nonzero to close the connection.
    func writable() -> Int32 {
        guard let wsi else { return -1 }
        switch phase {
        case .receivingBody, .awaitingResponse, .finished:
            return 0
        case .sendingHeaders(let response):
            let bodyLength = request.method == "HEAD" ? 0 : response.body.count
            guard HTTPExchange.writeHeaders(response, contentLength: response.body.count, on: wsi) == 0 else { return -1 }
            if bodyLength == 0 {
                return finish(wsi)
            }
            phase = .sendingBody(response, offset: 0)
            lws_callback_on_writable(wsi)
            return 0
        case .sendingBody(let response, let offset):
            let count = min(HTTPExchange.bodyChunkSize, response.body.count - offset)
            let last = offset + count == response.body.count
            var scratch = [UInt8](repeating: 0, count: cws_lws_pre)
            scratch.reserveCapacity(cws_lws_pre + count)
            scratch.append(contentsOf: response.body[offset..<(offset + count)])
            let written = scratch.withUnsafeMutableBufferPointer { buffer in
                cws_write(wsi, buffer.baseAddress! + cws_lws_pre, count, last ? cws_write_http_final : cws_write_http)
            }
            guard written >= count else { return -1 }
            if last { return finish(wsi) }
            phase = .sendingBody(response, offset: offset + count)
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// The response is out: the connection serves its next request, or closes.
    private func finish(_ wsi: OpaquePointer) -> Int32 {
        phase = .finished
        self.wsi = nil
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    /// Writes the status line and headers (with `content-length`). Returns nonzero on failure.
    private static func writeHeaders(_ response: HTTPResponse, contentLength: Int, on wsi: OpaquePointer) -> Int32 {
        var extra = 0
        for header in response.headers { extra += header.name.utf8.count + header.value.utf8.count + 4 }
        var buffer = [UInt8](repeating: 0, count: cws_lws_pre + 1024 + response.contentType.utf8.count + extra)
        return buffer.withUnsafeMutableBufferPointer { storage -> Int32 in
            let start = storage.baseAddress! + cws_lws_pre
            let end = storage.baseAddress! + storage.count - 1
            var cursor: UnsafeMutablePointer<UInt8>? = start
            guard lws_add_http_common_headers(
                wsi, UInt32(response.status), response.contentType, lws_filepos_t(contentLength), &cursor, end) == 0
            else { return 1 }
            for header in response.headers {
                let added = "\(header.name):".withCString { name in
                    header.value.withCString { value in
                        name.withMemoryRebound(to: UInt8.self, capacity: header.name.utf8.count + 1) { name in
                            value.withMemoryRebound(to: UInt8.self, capacity: header.value.utf8.count + 1) { value in
                                lws_add_http_header_by_name(wsi, name, value, Int32(header.value.utf8.count), &cursor, end)
                            }
                        }
                    }
                }
                guard added == 0 else { return 1 }
            }
            return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0 ? 0 : 1
        }
    }

    /// The request on `wsi` as lws parsed it; `uri` is the path lws passed to `LWS_CALLBACK_HTTP`.
    static func request(on wsi: OpaquePointer, uri: UnsafeMutableRawPointer?, length: Int) -> (HTTPRequest, expectsBody: Bool) {
        let methods: [(lws_token_indexes, String)] = [
            (WSI_TOKEN_GET_URI, "GET"), (WSI_TOKEN_POST_URI, "POST"), (WSI_TOKEN_HEAD_URI, "HEAD"),
            (WSI_TOKEN_PUT_URI, "PUT"), (WSI_TOKEN_DELETE_URI, "DELETE"), (WSI_TOKEN_OPTIONS_URI, "OPTIONS"),
            (WSI_TOKEN_PATCH_URI, "PATCH"),
        ]
        let method = methods.first(where: { lws_hdr_total_length(wsi, $0.0) > 0 }).map(\.1) ?? "GET"
        let path: String
        if let uri, length > 0 {
            path = String(decoding: UnsafeRawBufferPointer(start: uri, count: length), as: UTF8.self)
        } else {
            path = WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        }
        var query: [HTTPRequest.QueryItem] = []
        var fragment = [CChar](repeating: 0, count: 1024)
        var index: Int32 = 0
        while query.count < 32 {
            let count = lws_hdr_copy_fragment(wsi, &fragment, Int32(fragment.count), WSI_TOKEN_HTTP_URI_ARGS, index)
            guard count > 0 else { break }
            let text = String(decoding: fragment.prefix(Int(count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let equals = text.firstIndex(of: "=") {
                query.append(.init(name: String(text[..<equals]), value: String(text[text.index(after: equals)...])))
            } else {
                query.append(.init(name: text, value: ""))
            }
            index += 1
        }
        let lengthHeader = WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH)
        let contentLength = lengthHeader.flatMap { Int($0) } ?? 0
        let request = HTTPRequest(
            method: method, path: path, query: query,
            authorization: WebSocketCallbackDispatcher.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
            peer: WebSocketCallbackDispatcher.peer(wsi))
        return (request, contentLength > 0)
    }
}
