import HubLoop
import NetworkTestSupport
import Foundation
@testable import HubTransport
import Testing

/// Plain HTTP beside WebSocket on one server port: requests reach the delegate, which
/// answers at once or later on the loop; large bodies go out in pieces; keep-alive
/// connections serve several requests; upgrades keep working on the same port.
@Suite("HTTP serving", .serialized)
struct HTTPServingTests {
    /// Answers `/hello` at once, `/later` from a loop timer, `/big` with a large body,
    /// `/headers` with extra headers and echoes of the request; 404 otherwise.
    final class Routes: WebSocketServerDelegate, @unchecked Sendable {
        let big: [UInt8]
        let seen = EventQueue<HTTPRequest>()

        init(big: [UInt8]) { self.big = big }

        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = EchoHandler()
        }

        func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
            seen.push(exchange.request)
            switch exchange.request.path {
            case "/hello":
                exchange.respond(HTTPResponse(status: 200, text: "hello\n"))
            case "/later":
                let scheduler = EventLoopScheduler(eventLoop: server.eventLoop)
                _ = scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(50))) {
                    exchange.respond(HTTPResponse(status: 200, text: "later\n"))
                }
            case "/big":
                exchange.respond(HTTPResponse(status: 200, contentType: "application/octet-stream", body: big))
            case "/headers":
                let request = exchange.request
                let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
                exchange.respond(HTTPResponse(
                    status: 503, headers: [.init("cache-control", "no-store"), .init("x-hub-test", "yes")],
                    text: "\(request.method) \(query) \(request.authorization ?? "-")\n"))
            default:
                exchange.respond(.notFound(exchange.request.path))
            }
        }
    }

    private func start(_ routes: Routes, on loop: EventLoop) async throws -> (LoopBound<WebSocketServer>, Int) {
        try await onLoop(loop) {
            let server = WebSocketServer(eventLoop: loop, delegate: routes)
            try server.start()
            return (LoopBound(server, eventLoop: loop), server.port)
        }
    }

    @Test func requestsAreAnsweredAtOnceLaterAndInPiecesOnOneKeepAliveConnection() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let big = patternBytes(count: 200_000, seed: 7)
        let routes = Routes(big: big)
        let (_, port) = try await start(routes, on: loop)
        let responses = try await Blocking.run {
            let client = try HTTPTestClient(port: port)
            return [
                try client.send(path: "/hello"),
                try client.send(path: "/later"),
                try client.send(path: "/big"),
                try client.send(path: "/nothing/here"),
                try client.send(method: "HEAD", path: "/hello"),
            ]
        }
        #expect(responses[0].status == 200)
        #expect(responses[0].text == "hello\n")
        #expect(responses[0].headers["content-type"] == "text/plain; charset=utf-8")
        #expect(responses[1].status == 200)
        #expect(responses[1].text == "later\n")
        #expect(responses[2].status == 200)
        #expect(responses[2].body.count == big.count)
        #expect(responses[2].body == big)
        #expect(responses[3].status == 404)
        #expect(responses[3].text == "not found: /nothing/here\n")
        #expect(responses[4].status == 200)
        #expect(responses[4].headers["content-length"] == "6")
        #expect(responses[4].body.isEmpty)
    }

    @Test func methodQueryAuthorizationAndExtraHeadersTravel() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let routes = Routes(big: [])
        let (_, port) = try await start(routes, on: loop)
        let response = try await HTTPTestClient.request(
            port: port, path: "/headers?grace=5s&now", headers: ["Authorization": "Bearer abc"])
        #expect(response.status == 503)
        #expect(response.headers["cache-control"] == "no-store")
        #expect(response.headers["x-hub-test"] == "yes")
        #expect(response.text == "GET grace=5s&now= Bearer abc\n")
        let request = try await routes.seen.next()
        #expect(request.peer == "127.0.0.1")
        let posted = try await Blocking.run {
            try HTTPTestClient(port: port).send(method: "POST", path: "/headers", body: Array("ignored".utf8))
        }
        #expect(posted.text.hasPrefix("POST "))
    }

    @Test func webSocketUpgradesShareThePortAndStopAcceptingRefusesOnlyThem() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (server, port) = try await start(Routes(big: []), on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        #expect(try await HTTPTestClient.request(port: port, path: "/hello").text == "hello\n")
        try await onLoop(clientLoop) { connection.value.send(text: "still here") }
        #expect(try await events.next() == .text("still here"))

        try await onLoop(serverLoop) { server.value.stopAccepting() }
        let refused = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: refused)
        #expect(try await refused.next() == .failed(.connectionFailed))
        // The open connection and plain HTTP are still served.
        try await onLoop(clientLoop) { connection.value.send(text: "draining") }
        #expect(try await events.next() == .text("draining"))
        #expect(try await HTTPTestClient.request(port: port, path: "/hello").status == 200)
    }

    @Test(arguments: EventLoop.Configuration.EventLibrary.allCases)
    func aRequestWhoseConnectionClosesBeforeTheAnswerIsForgotten(
        library: EventLoop.Configuration.EventLibrary
    ) async throws {
        final class Silent: WebSocketServerDelegate, @unchecked Sendable {
            let exchanges = EventQueue<Bool>()
            var held: [HTTPExchange] = []
            func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {}
            func server(_ server: WebSocketServer, didReceive exchange: HTTPExchange) {
                held.append(exchange)
                exchanges.push(true)
            }
        }
        let loop = try EventLoop(configuration: .init(eventLibrary: library))
        defer { loop.shutdown() }
        let silent = Silent()
        let (server, port) = try await onLoop(loop) {
            let server = WebSocketServer(eventLoop: loop, delegate: silent)
            try server.start()
            return (LoopBound(server, eventLoop: loop), server.port)
        }
        let client = try HTTPTestClient(port: port)
        let request = Task { await Blocking.run { _ = try? client.send(path: "/never") } }
        _ = try await silent.exchanges.next()
        #expect(try await onLoop(loop) { server.value.pendingExchangeCount } == 1)
        client.shutdownConnection()
        _ = await request.value
        // The server notices the close; answering afterwards is harmless.
        for _ in 0..<600 {
            if try await onLoop(loop, { server.value.pendingExchangeCount }) == 0 { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(try await onLoop(loop) { server.value.pendingExchangeCount } == 0)
        try await onLoop(loop) {
            #expect(!silent.held[0].isOpen)
            silent.held[0].respond(HTTPResponse(status: 200, text: "too late"))
        }
    }
}
