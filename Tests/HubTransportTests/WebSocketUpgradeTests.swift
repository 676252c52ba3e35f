@testable import HubTransport
import Testing

/// The server's side of the opening handshake (RFC 6455 §4.2) without sockets.
@Suite("WebSocket upgrade")
struct WebSocketUpgradeTests {
    static func head(_ fields: [String: String], method: String = "GET", minor: Int = 1) -> HTTPRequestHead {
        HTTPRequestHead(
            method: method, target: "/", minorVersion: minor,
            headers: fields.sorted { $0.key < $1.key }.map { HTTPRequest.Header($0.key.lowercased(), $0.value) })
    }

    static let valid = [
        "Host": "127.0.0.1", "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
    ]

    @Test func theAcceptValueIsRFC6455s() {
        // RFC 6455 §1.3's example.
        #expect(WebSocketUpgrade.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let answer = String(decoding: WebSocketUpgrade.switchingProtocols(
            .init(acceptValue: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", subprotocol: "hub.v1")), as: UTF8.self)
        #expect(answer == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: hub.v1\r\n\r\n")
    }

    @Test func subprotocolsAreSelectedAsBefore() {
        #expect(WebSocketUpgrade.evaluate(Self.head(Self.valid), subprotocol: "hub.v1")
            == .accept(.init(acceptValue: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", subprotocol: nil)))
        var offering = Self.valid
        offering["Sec-WebSocket-Protocol"] = "other, hub.v1"
        #expect(WebSocketUpgrade.evaluate(Self.head(offering), subprotocol: "hub.v1")
            == .accept(.init(acceptValue: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", subprotocol: "hub.v1")))
        offering["Sec-WebSocket-Protocol"] = "other"
        guard case .refuse(let response) = WebSocketUpgrade.evaluate(Self.head(offering), subprotocol: "hub.v1") else {
            Issue.record("a foreign subprotocol was accepted")
            return
        }
        #expect(response.status == 400)
    }

    @Test(arguments: [
        ("POST", ["Sec-WebSocket-Key": nil], "POST", 1, 400),
        ("HTTP/1.0", [:], "GET", 0, 400),
        ("no Host", ["Host": nil], "GET", 1, 400),
        ("no key", ["Sec-WebSocket-Key": nil], "GET", 1, 400),
        ("a short key", ["Sec-WebSocket-Key": "c2hvcnQ="], "GET", 1, 400),
        ("a key that is not base64", ["Sec-WebSocket-Key": "!!!!!!!!!!!!!!!!!!!!!!!="], "GET", 1, 400),
        ("version 8", ["Sec-WebSocket-Version": "8"], "GET", 1, 426),
        ("no version", ["Sec-WebSocket-Version": nil], "GET", 1, 426),
        ("two versions", ["Sec-WebSocket-Version": "13, 8"], "GET", 1, 426),
    ] as [(String, [String: String?], String, Int, Int)])
    func badUpgradesAreRefused(name: String, changes: [String: String?], method: String, minor: Int, status: Int) {
        var fields = Self.valid
        for (key, value) in changes { fields[key] = value }
        guard case .refuse(let response) = WebSocketUpgrade.evaluate(Self.head(fields, method: method, minor: minor), subprotocol: "hub.v1")
        else {
            Issue.record("\(name) was accepted")
            return
        }
        #expect(response.status == status, "\(name)")
        if status == 426 {
            #expect(response.headers.contains(.init("sec-websocket-version", "13")), "\(name)")
        }
    }
}
