import Foundation
import HubClient
import RemoteTestSupport
import HubServer
import HubTransport
import Testing

/// A WebSocket server that speaks just enough (or wrongly) for the client's failure paths.
final class ScriptedServer: WebSocketServerDelegate, WebSocketConnectionHandler {
    /// What the server sends on accept, and in answer to every message.
    let onAccept: [String]
    let onMessage: [String]

    init(onAccept: [String], onMessage: [String]) {
        self.onAccept = onAccept
        self.onMessage = onMessage
    }

    func server(_ server: WebSocketServer, didAccept connection: WebSocketConnection) {
        connection.handler = self
        for text in onAccept { connection.send(text: text) }
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        for text in onMessage { connection.send(text: text) }
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {}

    /// Starts a scripted server on a new loop; returns the loop (shut it down) and the port.
    static func start(onAccept: [String], onMessage: [String] = []) async throws -> (EventLoop, Int) {
        let loop = try EventLoop(configuration: .init(name: "scripted-server"))
        let port = try await loop.submit {
            let server = WebSocketServer(eventLoop: loop, delegate: ScriptedServer(onAccept: onAccept, onMessage: onMessage))
            try server.start()
            return server.port
        }
        return (loop, port)
    }
}

private let welcome = #"{"op":"welcome","protocol":1,"server":"scripted","session":"s1"}"#

@Suite("HubClient failures")
struct HubClientFailureTests {
    @Test func aWelcomeOfAnotherProtocolIsAProtocolError() async throws {
        let (loop, port) = try await ScriptedServer.start(
            onAccept: [#"{"op":"welcome","protocol":2,"server":"x","session":"s"}"#])
        defer { loop.shutdown() }
        await #expect {
            _ = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        } throws: { error in
            guard let error = error as? HubClientError else { return false }
            return error.code == .protocolError && error.message.contains("protocol")
        }
    }

    @Test func anInvalidMessageFailsLiveSubscriptionsWithProtocolError() async throws {
        let (loop, port) = try await ScriptedServer.start(onAccept: [welcome], onMessage: [#"{"op":"next"}"#])
        defer { loop.shutdown() }
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        let recorder = Recorder(demand: .max(1))
        client.subscribe(to: "x").subscribe(recorder)
        let error = try #require(try await recorder.events.next().failure)
        #expect(error.code == .protocolError)
        await client.close()
    }

    @Test func noWelcomeIsAConnectTimeout() async throws {
        let (loop, port) = try await ScriptedServer.start(onAccept: [])
        defer { loop.shutdown() }
        var configuration = testConfiguration()
        configuration.connectTimeout = .milliseconds(200)
        await #expect {
            _ = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: configuration)
        } throws: { error in
            (error as? HubClientError)?.code == .timeout
        }
    }

    @Test func noAckIsARequestTimeout() async throws {
        let (loop, port) = try await ScriptedServer.start(onAccept: [welcome])
        defer { loop.shutdown() }
        var configuration = testConfiguration()
        configuration.requestTimeout = .milliseconds(200)
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: configuration)
        await #expect {
            _ = try await client.list()
        } throws: { error in
            (error as? HubClientError)?.code == .timeout
        }
        await client.close()
    }

    @Test func bearerTokensInTheHeaderOrInHello() async throws {
        let service = try HubService(configuration: .init(
            host: "127.0.0.1", port: 0, session: SessionConfiguration(tokens: ["s3cret"])))
        let port = try await service.start()
        let url = "ws://127.0.0.1:\(port)/"
        var header = testConfiguration()
        header.token = "s3cret"
        let viaHeader = try await HubClient.connect(to: url, configuration: header)
        try await viaHeader.send(1, to: "secured")
        await viaHeader.close()

        var hello = header
        hello.tokenInHello = true
        hello.clientName = "tests"
        let viaHello = try await HubClient.connect(to: url, configuration: hello)
        #expect(subscribers(of: "secured", in: try await viaHello.list()) == 0)
        await viaHello.close()

        var wrong = testConfiguration()
        wrong.token = "nope"
        let refused = try HubClient(url: url, configuration: wrong)
        await #expect {
            try await refused.connect()
            _ = try await refused.list()
        } throws: { error in
            (error as? HubClientError)?.code == HubClientError.Code(.unauthorized)
        }
        await refused.close()
        await service.shutdown()
    }
}
