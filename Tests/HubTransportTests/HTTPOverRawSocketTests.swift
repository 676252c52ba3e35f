import Foundation
import Glibc
@testable import HubTransport
import HubLoop
import NetworkTestSupport
import Testing

/// A TCP client that writes bytes as they are and reads what comes back (blocking, with
/// a timeout): for requests well-behaved clients never send.
final class RawSocket: @unchecked Sendable {
    private let fd: Int32
    private(set) var received: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw HTTPTestClient.Failure(description: "connect: errno \(errno)") }
    }

    deinit { close(fd) }

    func write(_ text: String) { write(Array(text.utf8)) }

    func write(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Reads until `done(received)` holds; `false` at the end of the stream or the timeout.
    @discardableResult
    func read(until done: ([UInt8]) -> Bool) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !done(received) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            received += buffer[..<count]
        }
        return true
    }

    /// Reads until the peer closes (or the timeout); returns whether it closed.
    func readToEnd() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return false }
            received += buffer[..<count]
        }
    }

    var text: String { String(decoding: received, as: UTF8.self) }

    /// How many complete responses (by their `content-length`) have been received.
    func responses() -> [(status: Int, head: String, body: String)] {
        var responses: [(Int, String, String)] = []
        var rest = received[...]
        while let end = rest.firstRange(of: [13, 10, 13, 10]) {
            let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self)
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let bodyStart = end.upperBound
            let isHead = false
            guard rest.distance(from: bodyStart, to: rest.endIndex) >= (isHead ? 0 : length) else { break }
            let bodyEnd = rest.index(bodyStart, offsetBy: length)
            let status = Int(head.split(separator: " ")[1]) ?? 0
            responses.append((status, head, String(decoding: rest[bodyStart..<bodyEnd], as: UTF8.self)))
            rest = rest[bodyEnd...]
        }
        return responses
    }
}

/// HTTP/1.1 as the server speaks it itself: bodies, chunked bodies, pipelining, `Expect`,
/// the errors for what is malformed or too large, keep-alive, and streamed answers.
@Suite("HTTP over the raw socket", .serialized)
struct HTTPOverRawSocketTests {
    /// Echoes each request (method, path, body); `/stream` answers with a stream the test
    /// drives through `streams`.
    final class Echo: WebSocketServerDelegate, @unchecked Sendable {
        let streams = EventQueue<LoopBound<HTTPExchange>>()
        let closedStreams = EventQueue<String>()

        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = EchoHandler()
        }

        func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
            let request = exchange.request
            if request.path == "/stream" {
                exchange.handler = StreamWatcher(closed: closedStreams)
                exchange.startStreaming(contentType: "text/event-stream", headers: [.init("cache-control", "no-store")])
                streams.push(LoopBound(exchange, eventLoop: server.eventLoop))
                return
            }
            let body = "\(request.method) \(request.path) \(request.version) \(request.header("x-tag") ?? "-") "
                + String(decoding: request.body, as: UTF8.self)
            exchange.respond(HTTPResponse(status: 200, text: body))
        }
    }

    final class StreamWatcher: HTTPExchangeHandler {
        let closed: EventQueue<String>
        init(closed: EventQueue<String>) { self.closed = closed }
        func exchangeDidClose(_ exchange: HTTPExchange) { closed.push(exchange.request.path) }
    }

    private func start(_ delegate: Echo, configuration: WebSocketServer.Configuration = .init()) async throws
        -> (EventLoop, LoopBound<WebSocketServer>, Int)
    {
        let loop = try EventLoop()
        let (server, port) = try await onLoop(loop) {
            let server = WebSocketServer(eventLoop: loop, configuration: configuration, delegate: delegate)
            try server.start()
            return (LoopBound(server, eventLoop: loop), server.port)
        }
        return (loop, server, port)
    }

    @Test func bodiesChunkedBodiesAndPipelinedRequestsAreAnsweredInOrder() async throws {
        let (loop, _, port) = try await start(Echo())
        defer { loop.shutdown() }
        let responses = try await Blocking.run { () -> [(status: Int, head: String, body: String)] in
            let client = try RawSocket(port: port)
            // Three requests in one write, the second with a body, the third chunked.
            client.write(
                "GET /one HTTP/1.1\r\nHost: h\r\nX-Tag: 1\r\n\r\n"
                    + "POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world"
                    + "PUT /three HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n")
            client.read { _ in client.responses().count >= 3 }
            return client.responses()
        }
        #expect(responses.map(\.status) == [200, 200, 200])
        #expect(responses.map(\.body) == ["GET /one HTTP/1.1 1 ", "POST /two HTTP/1.1 - hello world", "PUT /three HTTP/1.1 - abcde"])
        #expect(responses[0].head.lowercased().contains("connection: keep-alive"))
    }

    @Test func aBodySentAfter100ContinueIsRead() async throws {
        let (loop, _, port) = try await start(Echo())
        defer { loop.shutdown() }
        let text = try await Blocking.run { () -> String in
            let client = try RawSocket(port: port)
            client.write("POST /later HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            client.read { String(decoding: $0, as: UTF8.self).contains("100 Continue\r\n\r\n") }
            client.write("body")
            client.read { String(decoding: $0, as: UTF8.self).hasSuffix("body") }
            return client.text
        }
        #expect(text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
        #expect(text.hasSuffix("POST /later HTTP/1.1 - body"))
    }

    @Test func headAndHTTP10AreAnsweredAsTheySay() async throws {
        let (loop, _, port) = try await start(Echo())
        defer { loop.shutdown() }
        let (head, old, oldClosed) = try await Blocking.run { () -> (String, String, Bool) in
            let client = try RawSocket(port: port)
            client.write("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n")
            client.read { $0.firstRange(of: [13, 10, 13, 10]) != nil }
            let head = client.text
            let old = try RawSocket(port: port)
            old.write("GET /old HTTP/1.0\r\n\r\n")
            let closed = old.readToEnd()
            return (head, old.text, closed)
        }
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("content-length: 19\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))
        #expect(old.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(old.contains("connection: close"))
        #expect(old.hasSuffix("GET /old HTTP/1.0 - "))
        #expect(oldClosed)
    }

    @Test(arguments: [
        ("a malformed request line", "\u{00}\u{01} / HTTP/1.1\r\n\r\n", 400),
        ("HTTP/9.9", "GET / HTTP/9.9\r\n\r\n", 505),
        ("a body over the limit", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2048\r\n\r\n", 413),
        ("a chunked body over the limit", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n801\r\n", 413),
        ("a head over the limit", "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "a", count: 4096) + "\r\n\r\n", 431),
        ("a request line over the limit", "GET /" + String(repeating: "a", count: 2048) + " HTTP/1.1\r\n\r\n", 414),
        ("both lengths", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("an unknown coding", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: br\r\n\r\n", 501),
        ("an HTTP/1.0 upgrade", "GET / HTTP/1.0\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", 400),
        ("an upgrade to version 8", "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", 426),
    ] as [(String, String, Int)])
    func badRequestsAreAnsweredWithTheirStatusThenClosed(name: String, request: String, status: Int) async throws {
        let (loop, _, port) = try await start(
            Echo(), configuration: .init(maximumRequestBodySize: 1024, maximumRequestHeadSize: 2048))
        defer { loop.shutdown() }
        let (text, closed) = try await Blocking.run { () -> (String, Bool) in
            let client = try RawSocket(port: port)
            client.write(request)
            let closed = client.readToEnd()
            return (client.text, closed)
        }
        #expect(text.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(text.prefix(80))")
        #expect(text.contains("connection: close"), "\(name)")
        #expect(closed, "\(name): the connection stays open")
        if status == 426 { #expect(text.contains("sec-websocket-version: 13")) }
    }

    @Test func aSocketThatSendsNoWholeRequestIsClosedAfterTheHandshakeTimeout() async throws {
        let (loop, server, port) = try await start(Echo(), configuration: .init(handshakeTimeout: 1))
        defer { loop.shutdown() }
        let started = ContinuousClock.now
        let closed = try await Blocking.run { () -> Bool in
            let client = try RawSocket(port: port, timeoutSeconds: 10)
            client.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc")
            return client.readToEnd()
        }
        #expect(closed)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(try await onLoop(loop) { server.value.timedOutHandshakeCount } == 1)
    }

    /// A keep-alive socket that sends no next request is closed after the handshake
    /// timeout too; it is not counted as a pending handshake meanwhile.
    @Test func anIdleKeepAliveSocketIsClosedAfterTheHandshakeTimeout() async throws {
        let (loop, server, port) = try await start(Echo(), configuration: .init(handshakeTimeout: 1))
        defer { loop.shutdown() }
        let client = try RawSocket(port: port, timeoutSeconds: 10)
        let started = ContinuousClock.now
        let closed = await Blocking.run { () -> Bool in
            client.write("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
            return client.readToEnd()
        }
        #expect(client.responses().count == 1, "\(client.text.prefix(120))")
        #expect(client.text.contains("connection: keep-alive"))
        #expect(closed)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(try await onLoop(loop) { server.value.pendingHandshakeCount } == 0)
        #expect(try await onLoop(loop) { server.value.timedOutHandshakeCount } == 0)
    }

    @Test func aStreamedAnswerGoesOutPieceByPieceAndHearsThePeerLeave() async throws {
        let delegate = Echo()
        let (loop, _, port) = try await start(delegate)
        defer { loop.shutdown() }
        let client = try RawSocket(port: port)
        let headRead = Task {
            await Blocking.run { () -> String in
                client.write("GET /stream HTTP/1.1\r\nHost: h\r\n\r\n")
                client.read { $0.firstRange(of: [13, 10, 13, 10]) != nil }
                return client.text
            }
        }
        let stream = try await delegate.streams.next()
        let head = await headRead.value
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("transfer-encoding: chunked\r\n"))
        #expect(head.contains("content-type: text/event-stream\r\n"))
        for index in 1...3 {
            try await onLoop(loop) { stream.value.write(Array("data: \(index)\n\n".utf8)) }
            let text = await Blocking.run { () -> String in
                client.read { String(decoding: $0, as: UTF8.self).contains("data: \(index)\n\n\r\n") }
                return client.text
            }
            #expect(text.hasSuffix("9\r\ndata: \(index)\n\n\r\n"))
        }
        #expect(try await onLoop(loop) { stream.value.isStreaming })
        client.shutdown()
        #expect(try await delegate.closedStreams.next() == "/stream")
        #expect(try await onLoop(loop) { !stream.value.isOpen })
    }

    @Test func anEndedStreamLeavesTheConnectionForTheNextRequest() async throws {
        let delegate = Echo()
        let (loop, _, port) = try await start(delegate)
        defer { loop.shutdown() }
        let client = try RawSocket(port: port)
        client.write("GET /stream HTTP/1.1\r\nHost: h\r\n\r\n")
        let stream = try await delegate.streams.next()
        try await onLoop(loop) {
            stream.value.write(Array("one".utf8))
            stream.value.endStream()
            #expect(!stream.value.write(Array("late".utf8)))
        }
        let text = await Blocking.run { () -> String in
            client.read { String(decoding: $0, as: UTF8.self).hasSuffix("0\r\n\r\n") }
            client.write("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
            client.read { String(decoding: $0, as: UTF8.self).hasSuffix("GET /next HTTP/1.1 - ") }
            return client.text
        }
        #expect(text.contains("\r\n\r\n3\r\none\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"))
    }
}

extension RawSocket {
    /// Shuts the connection down both ways.
    func shutdown() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
