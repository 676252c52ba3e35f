import HubLoop
import NetworkTestSupport
import Foundation
@testable import HubTransport
import Testing

/// Real servers and clients over 127.0.0.1, each on its own event loop.
@Suite("WebSocket", .serialized)
struct WebSocketTests {
    @Test(arguments: EventLoop.Configuration.EventLibrary.allCases)
    func echoesTextAndBinaryMessages(library: EventLoop.Configuration.EventLibrary) async throws {
        let serverLoop = try EventLoop(configuration: .init(eventLibrary: library))
        let clientLoop = try EventLoop(configuration: .init(eventLibrary: library))
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        #expect(port > 0)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        try await onLoop(clientLoop) {
            connection.value.send(text: "hello, hub")
            connection.value.send([0, 1, 2, 255], kind: .binary)
            connection.value.send(text: "")
        }
        #expect(try await events.next() == .text("hello, hub"))
        #expect(try await events.next() == .message(.binary, [0, 1, 2, 255]))
        #expect(try await events.next() == .text(""))
    }

    @Test func pathAuthorizationAndSubprotocolReachTheServer() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let accepted = EventQueue<AcceptedConnection>()
        let (_, port) = try await startEchoServer(on: serverLoop, accepted: accepted)
        let events = EventQueue<ConnectionEvent>()
        let offered = try await connectClient(
            on: clientLoop, port: port, path: "/feeds?x=1", authorization: "Bearer s3cret", events: events)
        #expect(try await events.next() == .open)
        let request = try await accepted.next()
        #expect(request.subprotocol == "hub.v1")
        #expect(try await onLoop(clientLoop) { offered.value.subprotocol } == "hub.v1")
        #expect(request.path.hasPrefix("/feeds"))
        #expect(request.authorization == "Bearer s3cret")

        // A client that offers no subprotocol is accepted too.
        let plain = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, subprotocol: nil, events: plain)
        #expect(try await plain.next() == .open)
        let plainRequest = try await accepted.next()
        #expect(plainRequest.authorization == nil)
        #expect(plainRequest.subprotocol == nil)
        #expect(try await onLoop(clientLoop) { connection.value.subprotocol } == nil)
        try await onLoop(clientLoop) { connection.value.send(text: "x") }
        #expect(try await plain.next() == .text("x"))
    }

    @Test func serverCanRefuseTheHandshake() async throws {
        final class Refusing: WebSocketServerDelegate {
            func server(_ server: WebSocketServer, shouldAccept request: WebSocketUpgradeRequest) -> Bool {
                request.authorization == "Bearer ok"
            }
            func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
                connection.handler = EchoHandler()
            }
        }
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let port = try await onLoop(serverLoop) {
            let server = WebSocketServer(eventLoop: serverLoop, delegate: Refusing())
            try server.start()
            return server.port
        }
        let refused = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, authorization: "Bearer no", events: refused)
        #expect(try await refused.next() == .failed(.connectionFailed))
        let allowed = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, authorization: "Bearer ok", events: allowed)
        #expect(try await allowed.next() == .open)
    }

    /// 600 KiB goes out in 64 KiB fragments and comes back reassembled, both ways.
    @Test func largeMessageIsFragmentedAndReassembled() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let payload = patternBytes(count: 600 << 10, seed: 7)
        try await onLoop(clientLoop) {
            connection.value.send(payload, kind: .binary)
            connection.value.send(text: "after")
        }
        #expect(try await events.next() == .message(.binary, payload))
        #expect(try await events.next() == .text("after"))
    }

    @Test func messageAtTheLimitIsAcceptedAndOverItClosesWith1009() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let limit = 100 << 10
        let (_, port) = try await startEchoServer(
            on: serverLoop, configuration: .init(limits: .init(maximumMessageSize: limit)))

        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let exact = patternBytes(count: limit, seed: 1)
        try await onLoop(clientLoop) { connection.value.send(exact, kind: .binary) }
        #expect(try await events.next() == .message(.binary, exact))
        try await onLoop(clientLoop) { connection.value.send(patternBytes(count: limit + 1, seed: 2), kind: .binary) }
        #expect(try await events.next() == .closed(1009))

        // A small unfragmented message over a small limit.
        let (_, smallPort) = try await startEchoServer(
            on: serverLoop, configuration: .init(limits: .init(maximumMessageSize: 16)))
        let small = EventQueue<ConnectionEvent>()
        let smallConnection = try await connectClient(on: clientLoop, port: smallPort, events: small)
        #expect(try await small.next() == .open)
        try await onLoop(clientLoop) { smallConnection.value.send(text: String(repeating: "x", count: 17)) }
        #expect(try await small.next() == .closed(1009))
    }

    /// An echo server and one open client connection to it, each on a loop of its own,
    /// for `body` (given the client's loop, the connection and its events).
    private func withEchoConnection(
        client configuration: WebSocketClient.Configuration = .init(),
        _ body: (EventLoop, LoopBound<WebSocketConnection>, EventQueue<ConnectionEvent>) async throws -> Void
    ) async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, configuration: configuration, events: events)
        #expect(try await events.next() == .open)
        try await body(clientLoop, connection, events)
    }

    @Test func invalidUTF8TextClosesWith1007() async throws {
        try await withEchoConnection { clientLoop, connection, events in
            try await onLoop(clientLoop) { connection.value.send(Array("héllo".utf8), kind: .text) }
            #expect(try await events.next() == .text("héllo"))
            try await onLoop(clientLoop) { connection.value.send([0x68, 0xFF, 0x69], kind: .text) }
            let closeEvent = try await events.next()
            #expect(closeEvent == .closed(1007), "\(closeEvent)")
        }
    }

    /// The check runs on the whole message: a scalar split between fragments is fine,
    /// and a malformed one deep in a fragmented message still closes with 1007.
    @Test func utf8IsCheckedOnTheWholeFragmentedMessage() async throws {
        try await withEchoConnection(client: .init(limits: .init(fragmentSize: 3))) { clientLoop, connection, events in
            let text = "héllo wörld: 3 € and 𝄞, " + String(repeating: "ascii ", count: 40) + "ü"
            try await onLoop(clientLoop) { connection.value.send(Array(text.utf8), kind: .text) }
            #expect(try await events.next() == .text(text))
            // A truncated three-byte scalar after 1,000 ASCII bytes, then more ASCII.
            let malformed = Array(repeating: UInt8(ascii: "a"), count: 1000) + [0xE2, 0x82] + Array("bcd".utf8)
            try await onLoop(clientLoop) { connection.value.send(malformed, kind: .text) }
            let closeEvent = try await events.next()
            #expect(closeEvent == .closed(1007), "\(closeEvent)")
        }
    }

    /// Binary messages are bytes: they are not checked.
    @Test func binaryMessagesAreNotCheckedForUTF8() async throws {
        try await withEchoConnection { clientLoop, connection, events in
            try await onLoop(clientLoop) { connection.value.send([0x68, 0xFF, 0x69], kind: .binary) }
            #expect(try await events.next() == .message(.binary, [0x68, 0xFF, 0x69]))
        }
    }

    @Test func twoHundredConcurrentClientsEachGetTheirEcho() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (server, port) = try await startEchoServer(on: serverLoop)
        let count = 200
        let events = EventQueue<(Int, ConnectionEvent)>()
        try await onLoop(clientLoop) {
            let client = WebSocketClient(eventLoop: clientLoop)
            for index in 0..<count {
                let connection = client.connect(
                    host: "127.0.0.1", port: port, handler: RecordingHandler(tagged: events, tag: index))
                connection.send(text: "client \(index)")  // queued until open
            }
        }
        var opened = Set<Int>()
        var echoed = Set<Int>()
        for (tag, event) in try await events.next(2 * count, timeout: .seconds(30), "opens and echoes") {
            switch event {
            case .open: opened.insert(tag)
            case .text("client \(tag)"): echoed.insert(tag)
            default: Issue.record("unexpected event \(event) on client \(tag)")
            }
        }
        #expect(opened.count == count)
        #expect(echoed.count == count)
        #expect(try await onLoop(serverLoop) { server.value.openConnectionCount } == count)
    }

    @Test func tenThousandSmallMessagesKeepTheirOrder() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)

        /// Checks the order on the loop and reports once at the end.
        final class OrderChecker: WebSocketConnectionHandler {
            let total: Int
            let opened: EventQueue<Bool>
            let result: EventQueue<(received: Int, outOfOrder: Int)>
            var received = 0
            var outOfOrder = 0
            init(total: Int, opened: EventQueue<Bool>, result: EventQueue<(received: Int, outOfOrder: Int)>) {
                self.total = total
                self.opened = opened
                self.result = result
            }
            func connectionDidOpen(_ connection: WebSocketConnection) { opened.push(true) }
            func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
                if String(decoding: payload, as: UTF8.self) != "m\(received)" { outOfOrder += 1 }
                received += 1
                if received == total { result.push((received, outOfOrder)) }
            }
            func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
                result.push((received, -1))
            }
        }
        let total = 10_000
        let opened = EventQueue<Bool>()
        let result = EventQueue<(received: Int, outOfOrder: Int)>()
        let connection = try await onLoop(clientLoop) {
            let client = WebSocketClient(eventLoop: clientLoop)
            let handler = OrderChecker(total: total, opened: opened, result: result)
            return LoopBound(client.connect(host: "127.0.0.1", port: port, handler: handler), eventLoop: clientLoop)
        }
        #expect(try await opened.next())
        try await onLoop(clientLoop) {
            for index in 0..<total { connection.value.send(text: "m\(index)") }
        }
        let outcome = try await result.next(timeout: .seconds(30), "10,000 echoes")
        #expect(outcome.received == total)
        #expect(outcome.outOfOrder == 0)
    }

    /// Elements appended under one key while the message waits become one message.
    @Test func coalescedElementsArriveAsOneMessage() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let queued = try await onLoop(clientLoop) {
            for value in 1...3 {
                connection.value.sendCoalescing(key: 9, kind: .text, closing: Array("]".utf8)) { storage, opens in
                    storage.append(contentsOf: (opens ? "[" : ",").utf8)
                    storage.append(contentsOf: String(value).utf8)
                }
            }
            connection.value.sendCoalescing(key: 10, kind: .text) { storage, _ in storage.append(contentsOf: "x".utf8) }
            return (connection.value.queuedFrameCount, connection.value.queuedBytes)
        }
        #expect(queued.0 == 2)
        #expect(queued.1 == "[1,2,3]".utf8.count + 1)
        #expect(try await events.next() == .text("[1,2,3]"))
        #expect(try await events.next() == .text("x"))
        let drained = try await onLoop(clientLoop) { connection.value.queuedBytes }
        #expect(drained == 0)
    }

    @Test func connectionsBeyondTheMaximumAreClosedWith4429() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(
            on: serverLoop, configuration: .init(maximumConnections: 2, connectionLimitCloseCode: WebSocketCloseCode(4429)))
        for _ in 0..<2 {
            let events = EventQueue<ConnectionEvent>()
            _ = try await connectClient(on: clientLoop, port: port, events: events)
            #expect(try await events.next() == .open)
        }
        let third = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: third)
        #expect(try await third.next() == .open)
        #expect(try await third.next() == .closed(4429))
    }

    /// The transport's own default for the connection limit is 1008 (policy violation).
    @Test func connectionsBeyondTheMaximumAreClosedWith1008ByDefault() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop, configuration: .init(maximumConnections: 1))
        let first = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: first)
        #expect(try await first.next() == .open)
        let second = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: second)
        #expect(try await second.next(2, "open and close") == [.open, .closed(1008)])
    }

    @Test func clientCloseReachesTheServerAndBack() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let serverCloses = EventQueue<UInt16?>()
        let (server, port) = try await startEchoServer(on: serverLoop, closed: serverCloses)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        try await onLoop(clientLoop) { connection.value.send(text: "last") }
        #expect(try await events.next() == .text("last"))
        try await onLoop(clientLoop) {
            connection.value.send(text: "queued before the close")
            connection.value.close(code: .normal, reason: "bye")
            #expect(!connection.value.send(text: "dropped"))
        }
        // The queued message is written before the close frame; its echo may or may not
        // beat the server's close reply, so skip it if it comes.
        var event = try await events.next()
        if event == .text("queued before the close") { event = try await events.next() }
        #expect(event == .closed(1000))
        #expect(try await serverCloses.next() == 1000)
        // Nothing is left behind on either side once lws has freed the connections.
        let (open, tracked) = try await onLoop(serverLoop) {
            (server.value.openConnectionCount, server.value.trackedConnectionCount)
        }
        #expect(open == 0)
        #expect(tracked == 0)
        #expect(try await onLoop(clientLoop) { connection.value.state } == .closed)
    }

    @Test func serverCloseWith1001ReachesEveryClientAndShutdownIsPrompt() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (server, port) = try await startEchoServer(on: serverLoop)
        let count = 20
        let events = EventQueue<(Int, ConnectionEvent)>()
        try await onLoop(clientLoop) {
            let client = WebSocketClient(eventLoop: clientLoop)
            for index in 0..<count {
                client.connect(host: "127.0.0.1", port: port, handler: RecordingHandler(tagged: events, tag: index))
            }
        }
        let opens = try await events.next(count, "opens")
        #expect(Set(opens.map(\.0)).count == count)
        try await onLoop(serverLoop) { server.value.close(code: .goingAway) }
        let closes = try await events.next(count, "closes")
        for (tag, event) in closes {
            #expect(event == .closed(1001), "client \(tag)")
        }
        let clock = ContinuousClock()
        let elapsed = clock.measure { serverLoop.shutdown() }
        #expect(elapsed < .seconds(5))
    }

    @Test func shutdownWithLiveConnectionsReturnsPromptly() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<(Int, ConnectionEvent)>()
        try await onLoop(clientLoop) {
            let client = WebSocketClient(eventLoop: clientLoop)
            for index in 0..<10 {
                let connection = client.connect(
                    host: "127.0.0.1", port: port, handler: RecordingHandler(tagged: events, tag: index))
                connection.send(patternBytes(count: 200 << 10, seed: UInt64(index)), kind: .binary)
            }
        }
        _ = try await events.next(10, "opens")
        let clock = ContinuousClock()
        let elapsed = clock.measure { serverLoop.shutdown() }
        #expect(elapsed < .seconds(5))
        // Every client learns that its connection ended.
        var closed = Set<Int>()
        while closed.count < 10 {
            let (tag, event) = try await events.next(timeout: .seconds(10), "closes")
            if case .closed = event { closed.insert(tag) }
        }
        let clientElapsed = clock.measure { clientLoop.shutdown() }
        #expect(clientElapsed < .seconds(5))
    }

    @Test func connectingToAClosedPortFailsWithATypedError() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        serverLoop.shutdown()  // the port is closed now
        let events = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .failed(.connectionFailed))

        let invalid = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: 0, events: invalid)
        #expect(try await invalid.next() == .failed(.connectionFailed))
    }

    @Test func listeningOnATakenPortFailsWithATypedError() async throws {
        let loop = try EventLoop()
        let other = try EventLoop()
        defer { other.shutdown(); loop.shutdown() }
        let (_, port) = try await startEchoServer(on: loop)
        let taken = await #expect(throws: TransportError.self) {
            _ = try await startEchoServer(on: other, configuration: .init(port: port))
        }
        // The message names the address and why (a bind of it tells).
        #expect(taken?.code == .listenFailed)
        #expect(taken?.message == "cannot listen on 127.0.0.1:\(port): address already in use")
        // On the same loop too (lws would otherwise share the listener between vhosts).
        await #expect(throws: TransportError.self) {
            _ = try await startEchoServer(on: loop, configuration: .init(port: port))
        }
        await #expect(throws: TransportError.self) {
            _ = try await startEchoServer(on: other, configuration: .init(port: 70_000))
        }
    }

    @Test func pausedReadingHoldsMessagesUntilResumed() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        // Pause, send, then resume from a timer on the loop: the echo can only be
        // delivered after the resume marker, and it arrives intact.
        try await onLoop(clientLoop) {
            connection.value.pauseReading()
            connection.value.send(text: "held")
            let scheduler = clientLoop.scheduler
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(50))) {
                events.push(.text("resume marker"))
                connection.value.resumeReading()
            }
        }
        #expect(try await events.next() == .text("resume marker"))
        #expect(try await events.next() == .text("held"))
    }

    /// A loop that holds a fan-out's writes (here for up to a minute) still writes them
    /// at the end of the pass in which a connection's queue reaches
    /// `Limits.promptWriteSize`: a hold never grows a queue towards a slow-consumer bound.
    @Test func aQueueAtThePromptWriteSizeIsNotHeldBack() async throws {
        final class Collecting: WebSocketServerDelegate {
            let opened: EventQueue<Int>
            var connections: [WebSocketConnection] = []
            init(opened: EventQueue<Int>) { self.opened = opened }
            func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
                connections.append(connection)
                opened.push(connections.count)
            }
        }
        let serverLoop = try EventLoop(
            configuration: .init(writeCoalescingDelay: .seconds(60), writeCoalescingStreamingDelay: .seconds(60)))
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let opened = EventQueue<Int>()
        let (collecting, server, port) = try await onLoop(serverLoop) {
            let delegate = Collecting(opened: opened)
            let server = WebSocketServer(
                eventLoop: serverLoop, configuration: .init(limits: .init(promptWriteSize: 4096)), delegate: delegate)
            try server.start()
            return (LoopBound(delegate, eventLoop: serverLoop), LoopBound(server, eventLoop: serverLoop), server.port)
        }
        let events = EventQueue<(Int, ConnectionEvent)>()
        var clients: [LoopBound<WebSocketConnection>] = []
        for tag in 0..<3 {
            clients.append(try await onLoop(clientLoop) {
                let client = WebSocketClient(eventLoop: clientLoop)
                let connection = client.connect(
                    host: "127.0.0.1", port: port, path: "/", subprotocol: "hub.v1", authorization: nil,
                    handler: RecordingHandler(tagged: events, tag: tag))
                return LoopBound(connection, eventLoop: clientLoop)
            })
        }
        _ = try await opened.next(3)
        #expect(try await events.next(3).allSatisfy { $0.1 == .open })
        func fanOut(_ text: String) async throws {
            try await onLoop(serverLoop) {
                for connection in collecting.value.connections { connection.send(text: text) }
            }
        }
        // The first write goes at once (nothing was written before: no stream yet).
        try await fanOut("first")
        #expect(try await events.next(3).map(\.1) == Array(repeating: .text("first"), count: 3))
        // The next is held: messages are streaming (the last write is recent). The hold
        // lasts until the delay or 64 of the loop's passes (lws wakes it every 100 ms:
        // about 2 s when idle).
        try await fanOut("held")
        // 5 KB for each: past the prompt write size, so everything goes at the end of the
        // pass, well before the 64th.
        let large = String(repeating: "x", count: 5000)
        let sent = ContinuousClock.now
        try await fanOut(large)
        let received = try await events.next(6, timeout: .seconds(30))
        #expect(ContinuousClock.now - sent < .seconds(1))
        for tag in 0..<3 {
            #expect(received.filter { $0.0 == tag }.map(\.1) == [.text("held"), .text(large)])
        }
        _ = (clients, server)
    }
}

/// Sizes around the WebSocket length encodings (7-bit, 16-bit, 64-bit) and the fragment
/// and batch thresholds, sent back to back so that the server batches small ones and
/// fragments large ones: every echo arrives intact and in order.
@Suite("WebSocketFraming")
struct WebSocketFramingTests {
    @Test(arguments: [true, false])
    func mixedSizesEchoIntactAndInOrder(batching: Bool) async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let limits = WebSocketConnection.Limits(maximumBatchSize: batching ? 64 << 10 : 0)
        let (_, port) = try await startEchoServer(on: serverLoop, configuration: .init(limits: limits))
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let sizes = [0, 1, 125, 126, 127, 1000, 65_535, 65_536, 65_537, 3, 70_000, 125, 126, 200_000, 0, 7]
            + Array(repeating: 20, count: 300) + [30_000, 30_000, 30_000, 5]
        let messages: [ConnectionEvent] = sizes.enumerated().map { index, size in
            index % 2 == 0
                ? .message(.binary, patternBytes(count: size, seed: UInt64(index)))
                : .message(.text, Array(String(repeating: "abcdefghij", count: size / 10 + 1).utf8.prefix(size)))
        }
        try await onLoop(clientLoop) {
            for case let .message(kind, bytes) in messages { connection.value.send(bytes, kind: kind) }
        }
        let echoed = try await events.next(messages.count, timeout: .seconds(30), "echoes")
        #expect(echoed == messages)
    }
}

/// Small messages queued in one loop turn leave the server in few writes when batching
/// is on, one write each when it is off, and arrive in order either way.
@Suite("WebSocketBatching")
struct WebSocketBatchingTests {
    /// Sends `count` small messages as soon as a connection opens.
    final class Burst: WebSocketServerDelegate, WebSocketConnectionHandler {
        let count: Int
        init(count: Int) { self.count = count }
        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = self
        }
        func connectionDidOpen(_ connection: WebSocketConnection) {
            let prefix: [UInt8] = Array("n".utf8)
            for index in 0..<count {
                if index % 2 == 0 {
                    connection.send(text: "n\(index)")
                } else {
                    // The envelope form: prefix, shared body, suffix.
                    let digits = Array(String(index).utf8)
                    prefix.withUnsafeBytes { prefix in
                        digits.withUnsafeBytes { body in
                            _ = connection.send(
                                prefix: prefix, body: UnsafeRawBufferPointer(rebasing: body[0..<body.count - 1]),
                                suffix: UnsafeRawBufferPointer(rebasing: body[(body.count - 1)...]), kind: .text)
                        }
                    }
                }
            }
        }
        func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {}
        func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {}
    }

    @Test(arguments: [true, false])
    func burstOfSmallMessages(batching: Bool) async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let count = 1_000
        let limits = WebSocketConnection.Limits(maximumBatchSize: batching ? 64 << 10 : 0)
        let (server, port) = try await onLoop(serverLoop) {
            let server = WebSocketServer(
                eventLoop: serverLoop, configuration: .init(limits: limits), delegate: Burst(count: count))
            try server.start()
            return (LoopBound(server, eventLoop: serverLoop), server.port)
        }
        let events = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let received = try await events.next(count, timeout: .seconds(30), "burst")
        #expect(received == (0..<count).map { .text("n\($0)") })
        let (written, writes) = try await onLoop(serverLoop) {
            let connection = server.value.openConnections[0]
            return (connection.messagesWritten, connection.writeCalls)
        }
        #expect(written == count)
        if batching {
            #expect(writes < count / 10)
        } else {
            #expect(writes == count)
        }
    }
}

/// Messages queued during one turn of the loop leave at the end of it, all in one write
/// per connection, without waiting for a writable callback; a write lws could only
/// partly hand to the socket is finished from writable callbacks before anything newer.
@Suite("WebSocketFlushing")
struct WebSocketFlushingTests {
    @Test func messagesQueuedInOneTurnLeaveInOneWritePerConnection() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let accepted = EventQueue<AcceptedConnection>()
        // No keepalive within the test, however long a busy host makes it: a ping's or a
        // pong's write would count as one more.
        let (server, port) = try await startEchoServer(
            on: serverLoop, configuration: .init(pingInterval: 600, idleTimeout: 600), accepted: accepted)
        let clients = 5
        var events: [EventQueue<ConnectionEvent>] = []
        for _ in 0..<clients {
            let queue = EventQueue<ConnectionEvent>()
            _ = try await connectClient(
                on: clientLoop, port: port, configuration: .init(pingInterval: 600, idleTimeout: 600), events: queue)
            #expect(try await queue.next() == .open)
            events.append(queue)
        }
        let count = 300
        let before = try await onLoop(serverLoop) { server.value.openConnections.map(\.writeCalls) }
        try await onLoop(serverLoop) {
            for connection in server.value.openConnections {
                for index in 0..<count { connection.send(text: "m\(index)") }
            }
        }
        for queue in events {
            #expect(try await queue.next(count, timeout: .seconds(30), "fan-out") == (0..<count).map { .text("m\($0)") })
        }
        let after = try await onLoop(serverLoop) { server.value.openConnections.map(\.writeCalls) }
        #expect(zip(after, before).map { $0 - $1 } == Array(repeating: 1, count: clients))
    }

    @Test func aPartlyTakenWriteIsFinishedBeforeNewerMessages() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let accepted = EventQueue<AcceptedConnection>()
        let (server, port) = try await startEchoServer(on: serverLoop, accepted: accepted)
        let events = EventQueue<ConnectionEvent>()
        let client = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        try await onLoop(clientLoop) { client.value.pauseReading() }
        // Write until the socket (and the client's receive buffer) no longer take
        // everything: lws keeps the rest of the last write.
        let chunk = patternBytes(count: 60_000, seed: 7)
        var sent = 0
        for _ in 0..<2_000 {
            let buffered = try await onLoop(serverLoop) { () -> Bool in
                let connection = server.value.openConnections[0]
                connection.send(chunk, kind: .binary)
                return connection.isAwaitingWritable
            }
            sent += 1
            if buffered { break }
        }
        // Newer small messages, queued while older bytes wait.
        try await onLoop(serverLoop) {
            for index in 0..<50 { server.value.openConnections[0].send(text: "late\(index)") }
        }
        try await onLoop(clientLoop) { client.value.resumeReading() }
        let received = try await events.next(sent + 50, timeout: .seconds(60), "everything")
        #expect(received == Array(repeating: .message(.binary, chunk), count: sent) + (0..<50).map { .text("late\($0)") })
    }
}

/// The client side preframes (and masks) small messages too: a burst leaves in few writes
/// and the server, which checks the masking, echoes every message in order.
@Suite("WebSocketClientBatching")
struct WebSocketClientBatchingTests {
    @Test func clientBurstIsMaskedBatchedAndOrdered() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let (_, port) = try await startEchoServer(on: serverLoop)
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        let count = 1_000
        // Sizes on both sides of the 7-bit length limit.
        let messages: [ConnectionEvent] = (0..<count).map { index in
            .message(index % 3 == 0 ? .binary : .text, Array(String(repeating: "x", count: index % 200).utf8))
        }
        try await onLoop(clientLoop) {
            for case let .message(kind, bytes) in messages { connection.value.send(bytes, kind: kind) }
        }
        #expect(try await events.next(count, timeout: .seconds(30), "echoes") == messages)
        let (written, writes) = try await onLoop(clientLoop) {
            (connection.value.messagesWritten, connection.value.writeCalls)
        }
        #expect(written == count)
        #expect(writes < count / 10)
    }
}

/// A close requested by the server after queueing messages: the messages arrive first,
/// then the close code (as the hub does for `error` + 4401).
@Suite("WebSocketClose")
struct WebSocketCloseTests {
    final class SayGoodbye: WebSocketServerDelegate, WebSocketConnectionHandler {
        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = self
        }
        func connectionDidOpen(_ connection: WebSocketConnection) {
            connection.send(text: "first")
            connection.send(patternBytes(count: 150_000, seed: 3), kind: .binary)
            connection.close(code: WebSocketCloseCode(4401), reason: "no token")
            connection.send(text: "never")
        }
        func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {}
        func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {}
    }

    /// Queues messages, asks for a close after them, then escalates to a discarding close.
    final class Escalate: WebSocketServerDelegate, WebSocketConnectionHandler {
        let queuedBeforeEscalation: EventQueue<Int>
        init(queuedBeforeEscalation: EventQueue<Int>) { self.queuedBeforeEscalation = queuedBeforeEscalation }
        func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
            connection.handler = self
        }
        func connectionDidOpen(_ connection: WebSocketConnection) {
            for index in 0..<3 { connection.send(text: "m\(index)") }
            connection.close(code: .normal, reason: "after the queue")
            queuedBeforeEscalation.push(connection.queuedFrameCount)
            connection.close(code: WebSocketCloseCode(4008), reason: "slow", discardingQueued: true)
            connection.close(code: .goingAway)  // ignored: a close is already pending
        }
        func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {}
        func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {}
    }

    @Test func discardingCloseEscalatesAPendingClose() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let queued = EventQueue<Int>()
        let port = try await onLoop(serverLoop) {
            let server = WebSocketServer(eventLoop: serverLoop, delegate: Escalate(queuedBeforeEscalation: queued))
            try server.start()
            return server.port
        }
        let events = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next(2, "open and close") == [.open, .closed(4008)])
        #expect(try await queued.next() == 1)  // three messages, one preframed entry
    }

    @Test func abortDropsTheConnectionWithoutACloseCode() async throws {
        final class AbortOnMessage: WebSocketServerDelegate, WebSocketConnectionHandler {
            let closes: EventQueue<UInt16?>
            init(closes: EventQueue<UInt16?>) { self.closes = closes }
            func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
                connection.handler = self
            }
            func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
                connection.send(text: "never arrives")
                connection.abort()
                connection.abort()  // idempotent
            }
            func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
                closes.push(code?.rawValue)
            }
        }
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let closes = EventQueue<UInt16?>()
        let port = try await onLoop(serverLoop) {
            let server = WebSocketServer(eventLoop: serverLoop, delegate: AbortOnMessage(closes: closes))
            try server.start()
            return server.port
        }
        let events = EventQueue<ConnectionEvent>()
        let connection = try await connectClient(on: clientLoop, port: port, events: events)
        #expect(try await events.next() == .open)
        try await onLoop(clientLoop) { connection.value.send(text: "go") }
        #expect(try await closes.next() == nil)
        #expect(try await events.next() == .closed(nil))
    }

    @Test func queuedMessagesPrecedeTheCloseFrame() async throws {
        let serverLoop = try EventLoop()
        let clientLoop = try EventLoop()
        defer { clientLoop.shutdown(); serverLoop.shutdown() }
        let port = try await onLoop(serverLoop) {
            let server = WebSocketServer(eventLoop: serverLoop, delegate: SayGoodbye())
            try server.start()
            return server.port
        }
        let events = EventQueue<ConnectionEvent>()
        _ = try await connectClient(on: clientLoop, port: port, events: events)
        let seen = try await events.next(4, "messages and close")
        #expect(seen == [.open, .text("first"), .message(.binary, patternBytes(count: 150_000, seed: 3)), .closed(4401)])
    }
}
