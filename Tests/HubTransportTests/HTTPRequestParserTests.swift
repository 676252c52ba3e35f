@testable import HubTransport
import Testing

/// The HTTP/1.1 request parser without sockets: heads, bodies (by length and chunked),
/// pipelined requests, every split of the bytes, and each bound and malformation with
/// the status that answers it.
@Suite("HTTP request parser")
struct HTTPRequestParserTests {
    /// One parsed request, or the failure that ended the bytes.
    enum Parsed: Equatable {
        case request(method: String, target: String, headers: [String: String], body: [UInt8])
        case failure(Int)
    }

    /// Feeds `text`'s bytes in pieces cut at `cuts` and returns what came out, plus whether
    /// a request was left incomplete.
    static func parse(
        _ bytes: [UInt8], cuts: [Int] = [], limits: HTTPRequestParser.Limits = .init()
    ) -> (parsed: [Parsed], incomplete: Bool) {
        var parser = HTTPRequestParser(limits: limits)
        var parsed: [Parsed] = []
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        let bounds = Array(Set([0] + cuts.filter { $0 > 0 && $0 < bytes.count } + [bytes.count])).sorted()
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            let piece = Array(bytes[start..<end])
            piece.withUnsafeBytes { buffer in
                var offset = 0
                loop: while true {
                    switch parser.parse(buffer, from: &offset) {
                    case .needMore:
                        break loop
                    case .head(let parsedHead):
                        head = parsedHead
                        body = []
                    case .body(let range):
                        body += buffer[range]
                    case .end:
                        var headers: [String: String] = [:]
                        for field in head?.headers ?? [] { headers[field.name] = field.value }
                        parsed.append(.request(method: head?.method ?? "?", target: head?.target ?? "?", headers: headers, body: body))
                        head = nil
                    case .failure(let failure):
                        parsed.append(.failure(failure.status))
                        break loop
                    }
                }
            }
        }
        return (parsed, head != nil || !parser.isIdle)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func pipelinedRequestsWithBodiesReadTheSameInEverySplit() {
        let input = Self.bytes(
            "\r\nGET /a?x=1 HTTP/1.1\r\nHost: h\r\nX-Two:  spaced value \t\r\n\r\n"
                + "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
                + "PUT /c HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nTrailer: t\r\n\r\n"
                + "HEAD / HTTP/1.0\r\n\r\n")
        let expected: [Parsed] = [
            .request(method: "GET", target: "/a?x=1", headers: ["host": "h", "x-two": "spaced value"], body: []),
            .request(method: "POST", target: "/b", headers: ["host": "h", "content-length": "5"], body: Self.bytes("hello")),
            .request(method: "PUT", target: "/c", headers: ["host": "h", "transfer-encoding": "chunked"], body: Self.bytes("wikipedia")),
            .request(method: "HEAD", target: "/", headers: [:], body: []),
        ]
        let whole = Self.parse(input)
        #expect(whole.parsed == expected)
        #expect(!whole.incomplete)
        for cut in 1..<input.count {
            let split = Self.parse(input, cuts: [cut])
            #expect(split.parsed == expected, "cut at \(cut)")
        }
        #expect(Self.parse(input, cuts: Array(1..<input.count)).parsed == expected, "one byte at a time")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let cuts = (0..<Int.random(in: 1...10, using: &generator)).map { _ in Int.random(in: 1..<input.count, using: &generator) }
            #expect(Self.parse(input, cuts: cuts).parsed == expected)
        }
    }

    @Test func anIncompleteRequestWaits() {
        let result = Self.parse(Self.bytes("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"))
        #expect(result.parsed.isEmpty)
        #expect(result.incomplete)
    }

    @Test func headMeaning() throws {
        func head(_ text: String) throws -> HTTPRequestHead {
            try Self.bytes(text).withUnsafeBytes { try HTTPRequestParser.parseHead($0, limits: .init()).get() }
        }
        let keepAlive10 = try head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        #expect(keepAlive10.keepsAlive)
        #expect(try !head("GET / HTTP/1.0\r\n\r\n").keepsAlive)
        #expect(try head("GET / HTTP/1.1\r\n\r\n").keepsAlive)
        #expect(try !head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keepsAlive)
        let upgrade = try head("GET /chat HTTP/1.1\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\r\n")
        #expect(upgrade.asksForWebSocket)
        #expect(try !head("GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n").asksForWebSocket)
        let query = try head("GET /a%20b/c?x=1&y=a+b%21&flag&=v HTTP/1.1\r\n\r\n")
        #expect(query.path == "/a b/c")
        #expect(query.query == [
            .init(name: "x", value: "1"), .init(name: "y", value: "a b!"), .init(name: "flag", value: ""),
            .init(name: "", value: "v"),
        ])
        #expect(try head("GET /bad%0 HTTP/1.1\r\n\r\n").path == nil)
        #expect(try head("GET /nul%00 HTTP/1.1\r\n\r\n").path == nil)
        #expect(try head("GET http://example.com/x?y=1 HTTP/1.1\r\n\r\n").path == "/x")
        #expect(try head("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").expectsContinue)
        #expect(try head("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n").bodyFraming == .length(3))
        #expect(try head("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n").bodyFraming == .length(3))
        #expect(try head("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").bodyFraming == .none)
    }

    @Test(arguments: [
        ("garbage", "\u{01}\u{02} / HTTP/1.1\r\n\r\n", 400),
        ("no target", "GET HTTP/1.1\r\n\r\n", 400),
        ("relative target", "GET x HTTP/1.1\r\n\r\n", 400),
        ("HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 505),
        ("HTTP/9.9", "GET / HTTP/9.9\r\n\r\n", 505),
        ("bad version", "GET / HTTP/1.x\r\n\r\n", 400),
        ("no version", "GET /\r\n\r\n", 400),
        ("obs-fold", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400),
        ("space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400),
        ("no colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400),
        ("bare CR in a value", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400),
        ("both lengths", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("differing lengths", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
        ("negative length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        ("huge length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400),
        ("gzip coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ("chunked in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        ("chunk longer than its size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400),
        ("body over the limit", "POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", 413),
        ("chunks over the limit", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + String(repeating: "a", count: 1024) + "\r\n1\r\n", 413),
        ("head over the limit", "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 2100) + "\r\n\r\n", 431),
        ("request line over the limit", "GET /" + String(repeating: "a", count: 1100) + " HTTP/1.1\r\n\r\n", 414),
        ("too many fields", "GET / HTTP/1.1\r\n" + String(repeating: "X: y\r\n", count: 11) + "\r\n", 431),
    ] as [(String, String, Int)])
    func malformedAndOversizedRequestsAreRefusedWithTheirStatus(name: String, text: String, status: Int) {
        let limits = HTTPRequestParser.Limits(
            maximumRequestLineLength: 1024, maximumHeadSize: 2048, maximumHeaderCount: 10, maximumBodySize: 1024)
        let input = Self.bytes(text)
        let whole = Self.parse(input, limits: limits)
        #expect(whole.parsed.last == .failure(status), "\(name): \(whole.parsed)")
        for cut in stride(from: 1, to: input.count, by: max(1, input.count / 40)) {
            #expect(Self.parse(input, cuts: [cut], limits: limits).parsed.last == .failure(status), "\(name) cut at \(cut)")
        }
    }

    @Test(arguments: [
        ("garbage", [0xC3, 0x28, 0x00, 0xFF] as [UInt8]),
        ("zero bytes", [0, 0, 0, 0]),
        ("a space first", Array(" GET".utf8)),
        ("a method of 33 bytes", Array(String(repeating: "G", count: 33).utf8)),
        ("a control byte in the target", Array("GET /a\u{01}".utf8)),
        ("a tab in the request line", Array("GET\t/".utf8)),
    ] as [(String, [UInt8])])
    func aRequestLineThatNoRequestCanHaveIsRefusedAsItArrives(name: String, input: [UInt8]) {
        // No line end yet: the parser must not wait for one (or for its time-out).
        #expect(Self.parse(input).parsed == [.failure(400)], "\(name)")
        #expect(Self.parse(input, cuts: Array(1..<input.count)).parsed == [.failure(400)], "\(name), a byte at a time")
    }

    @Test func aRequestLineStillArrivingIsNotRefused() {
        for text in ["G", "GET", "GET ", "GET /a?b=1 HT", "M-SEARCH * HTTP/1.1", "GET / HTTP/1.1\r\nX: \u{01}"] {
            let result = Self.parse(Self.bytes(text))
            #expect(result.parsed.isEmpty && result.incomplete, "\(text)")
        }
    }

    @Test func aHeadOverTheLimitIsRefusedBeforeItEnds() {
        let limits = HTTPRequestParser.Limits(maximumRequestLineLength: 1024, maximumHeadSize: 2048)
        // No end of the head in sight: refused once the bound is passed.
        let input = Self.bytes("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 5000))
        #expect(Self.parse(input, cuts: [100, 1000, 3000], limits: limits).parsed == [.failure(431)])
    }
}
