import HubClient
import Testing

@Suite("HubURL")
struct HubURLTests {
    @Test func parsesHostPortAndPath() throws {
        let url = try HubURL(parsing: "ws://127.0.0.1:7420/hub?x=1")
        #expect(url.host == "127.0.0.1")
        #expect(url.port == 7420)
        #expect(url.path == "/hub?x=1")
        #expect(url.description == "ws://127.0.0.1:7420/hub?x=1")
    }

    @Test func defaultsPortAndPath() throws {
        let url = try HubURL(parsing: "WS://example.org")
        #expect(url.host == "example.org")
        #expect(url.port == 80)
        #expect(url.path == "/")
    }

    @Test func parsesWSSWithItsDefaultPort() throws {
        let explicit = try HubURL(parsing: "wss://127.0.0.1:7443/hub")
        #expect(explicit.isSecure)
        #expect(explicit.port == 7443)
        #expect(explicit.description == "wss://127.0.0.1:7443/hub")
        let implicit = try HubURL(parsing: "WSS://example.org")
        #expect(implicit.isSecure)
        #expect(implicit.port == 443)
        #expect(implicit.path == "/")
        #expect(try !HubURL(parsing: "ws://example.org").isSecure)
    }

    @Test func parsesBracketedIPv6() throws {
        let url = try HubURL(parsing: "ws://[::1]:9000/")
        #expect(url.host == "::1")
        #expect(url.port == 9000)
        #expect(url.hostAndPort == "[::1]:9000")
    }

    @Test(arguments: [
        ("http://127.0.0.1:7420/", "scheme 'http'"),
        ("ftp://127.0.0.1:7420/", "scheme 'ftp'"),
        ("127.0.0.1:7420", "missing scheme"),
        ("ws://:7420/", "missing host"),
        ("ws://127.0.0.1:99999/", "port '99999'"),
        ("ws://127.0.0.1:abc/", "port 'abc'"),
        ("ws://127.0.0.1:/", "empty port"),
        ("ws://bad host/", "host 'bad host'"),
        ("ws://user@host/", "user information"),
        ("ws://host/a b", "path '/a b'"),
        ("ws://host/#frag", "fragment"),
        ("ws://[::1/", "IPv6"),
    ])
    func refusesABadURLNamingThePart(text: String, part: String) {
        #expect {
            _ = try HubURL(parsing: text)
        } throws: { error in
            guard let error = error as? HubClientError else { return false }
            return error.code == .invalidURL && error.message.contains(part) && error.message.contains(text)
        }
    }

    @Test func clientInitRefusesABadURL() {
        #expect(throws: HubClientError.self) {
            _ = try HubClient(url: "ws://127.0.0.1:0/")
        }
    }
}
