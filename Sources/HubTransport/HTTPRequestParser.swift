/// An HTTP/1.1 request parser (RFC 9112) for a server's sockets: a state machine fed the
/// bytes as they arrive, in pieces of any size, that says what they are: a request's
/// head, pieces of its body (`Content-Length` or `Transfer-Encoding: chunked`), its end,
/// or why it is refused (a status code to answer with before closing).
///
/// Pipelined requests follow one another in the same bytes: after ``Event/end`` the
/// parser reads the next request. Every size a client controls is bounded (``Limits``).
/// Tested without sockets.
struct HTTPRequestParser {
    /// The bounds on what a client may send.
    struct Limits: Equatable, Sendable {
        /// The most bytes of a request line (414 beyond).
        var maximumRequestLineLength = 8 << 10
        /// The most bytes of a request's head, request line included (431 beyond).
        var maximumHeadSize = 16 << 10
        /// The most header fields of a request (431 beyond).
        var maximumHeaderCount = 100
        /// The largest request body (413 beyond, told by its `Content-Length` at once).
        var maximumBodySize = 1 << 20
    }

    /// Why a request is refused: the status to answer with, and a one-line explanation.
    struct Failure: Error, Equatable, Sendable {
        /// 400, 413, 414, 431, 501 or 505.
        var status: Int
        /// What was wrong, for the response body and logs.
        var message: String
        /// The request's path, when its head was read before the failure (a body too
        /// large, a malformed body framing).
        var path: String? = nil
    }

    /// What the bytes parsed so far amount to.
    enum Event: Equatable {
        /// Every byte given was used; more are needed.
        case needMore
        /// A request's head is complete (its body, if any, follows).
        case head(HTTPRequestHead)
        /// Body bytes, at these offsets of the input (decoded from chunks).
        case body(Range<Int>)
        /// The request (head and body) is complete; the next bytes start the next one.
        case end
        /// The request is malformed or too large: answer with the failure's status and close.
        case failure(Failure)
    }

    private enum State: Equatable {
        /// Reading a head (`sawRequestLine`: its first line ended).
        case head
        /// The head was returned; its end (no body) or its body comes next.
        case headDone
        /// `remaining` bytes of a `Content-Length` body.
        case fixedBody(remaining: Int)
        /// A chunk-size line.
        case chunkSize
        /// `remaining` bytes of chunk data.
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkDataEnd
        /// Trailer fields after the last chunk, until an empty line.
        case trailers
        /// Refused: nothing more is read.
        case failed
    }

    let limits: Limits
    private var state = State.head
    /// The current head's bytes so far (only when it spans several inputs).
    private var pending: [UInt8] = []
    /// The bytes of the line being read, in the head, chunk-size or trailer states.
    private var lineLength = 0
    /// Whether the current head's request line has ended.
    private var sawRequestLine = false
    /// Bytes of the current request line's method so far, or `nil` once its space came:
    /// a byte that no request line may hold is refused as it arrives, so that a client
    /// sending garbage gets its 400 at once rather than when its line would end.
    private var methodLength: Int? = 0
    /// Body bytes of the current request so far (a chunked body's bound).
    private var bodyBytes = 0
    /// Bytes of the current chunk-size line or trailer section (for their bound).
    private var lineBytes: [UInt8] = []
    private var trailerBytes = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Whether the parser is between requests (no byte of a next one read yet).
    var isIdle: Bool { state == .head && pending.isEmpty && !sawRequestLine && lineLength == 0 }

    /// Parses from `input[offset...]`: returns the next event, with `offset` moved past
    /// the bytes it used.
    mutating func parse(_ input: UnsafeRawBufferPointer, from offset: inout Int) -> Event {
        switch state {
        case .failed:
            offset = input.count
            return .needMore
        case .head:
            return parseHead(input, from: &offset)
        case .headDone:
            finishRequest()
            return .end
        case .fixedBody(let remaining):
            if remaining == 0 {
                finishRequest()
                return .end
            }
            let count = min(remaining, input.count - offset)
            guard count > 0 else { return .needMore }
            let range = offset..<(offset + count)
            offset += count
            state = .fixedBody(remaining: remaining - count)
            return .body(range)
        case .chunkSize:
            return parseChunkSize(input, from: &offset)
        case .chunkData(let remaining):
            let count = min(remaining, input.count - offset)
            guard count > 0 else { return .needMore }
            let range = offset..<(offset + count)
            offset += count
            state = remaining == count ? .chunkDataEnd : .chunkData(remaining: remaining - count)
            return .body(range)
        case .chunkDataEnd:
            return parseChunkDataEnd(input, from: &offset)
        case .trailers:
            return parseTrailers(input, from: &offset)
        }
    }

    private mutating func finishRequest() {
        state = .head
        sawRequestLine = false
        methodLength = 0
        lineLength = 0
        bodyBytes = 0
        trailerBytes = 0
        lineBytes.removeAll(keepingCapacity: true)
    }

    private mutating func fail(_ status: Int, _ message: String) -> Event {
        state = .failed
        pending = []
        return .failure(Failure(status: status, message: message))
    }

    // MARK: - The head

    private mutating func parseHead(_ input: UnsafeRawBufferPointer, from offset: inout Int) -> Event {
        var start = offset
        var index = offset
        // Empty lines before a request line are ignored (RFC 9112 §2.2).
        if pending.isEmpty, !sawRequestLine, lineLength == 0 {
            while index < input.count, input[index] == 0x0D || input[index] == 0x0A { index += 1 }
            start = index
        }
        var end: Int?
        while index < input.count {
            let byte = input[index]
            index += 1
            if byte == 0x0A {
                if lineLength == 0, sawRequestLine {
                    end = index
                    break
                }
                sawRequestLine = true
                lineLength = 0
            } else if byte != 0x0D {
                lineLength += 1
                if !sawRequestLine {
                    if lineLength > limits.maximumRequestLineLength {
                        return fail(414, "the request line is longer than \(limits.maximumRequestLineLength) bytes")
                    }
                    if let failure = checkRequestLineByte(byte) { return failure }
                }
            }
        }
        let size = pending.count + (end ?? index) - start
        guard size <= limits.maximumHeadSize else {
            return fail(431, "the request head is larger than \(limits.maximumHeadSize) bytes")
        }
        guard let end else {
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[start..<index]))
            offset = index
            return .needMore
        }
        offset = end
        let parsed: Result<HTTPRequestHead, Failure>
        if pending.isEmpty {
            parsed = HTTPRequestParser.parseHead(UnsafeRawBufferPointer(rebasing: input[start..<end]), limits: limits)
        } else {
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[start..<end]))
            parsed = pending.withUnsafeBytes { HTTPRequestParser.parseHead($0, limits: limits) }
            pending = []
        }
        sawRequestLine = false
        methodLength = 0
        lineLength = 0
        switch parsed {
        case .failure(let failure):
            state = .failed
            pending = []
            return .failure(failure)
        case .success(let head):
            switch head.bodyFraming {
            case .none: state = .headDone
            case .length(let length): state = .fixedBody(remaining: length)
            case .chunked: state = .chunkSize
            }
            return .head(head)
        }
    }

    /// The longest method accepted (the registered ones have at most 17 bytes).
    static let maximumMethodLength = 32

    /// Checks one byte of a request line as it arrives: the method's token bytes up to
    /// its space, then no control byte. Returns the failure to answer with, if any.
    private mutating func checkRequestLineByte(_ byte: UInt8) -> Event? {
        if let length = methodLength {
            if byte == 0x20 {
                guard length > 0 else { return fail(400, "a malformed request method") }
                methodLength = nil
            } else if !HTTPRequestParser.isTokenByte(byte) || length >= HTTPRequestParser.maximumMethodLength {
                return fail(400, "a malformed request method")
            } else {
                methodLength = length + 1
            }
        } else if byte < 0x20 || byte == 0x7F {
            return fail(400, "a control byte in the request line")
        }
        return nil
    }

    /// Parses a complete head (request line, fields, the empty line).
    static func parseHead(_ bytes: UnsafeRawBufferPointer, limits: Limits) -> Result<HTTPRequestHead, Failure> {
        var lines: [UnsafeRawBufferPointer] = []
        var lineStart = 0
        for index in 0..<bytes.count where bytes[index] == 0x0A {
            var lineEnd = index
            if lineEnd > lineStart, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            lines.append(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd]))
            lineStart = index + 1
        }
        // The last line is the empty one that ends the head.
        guard let requestLine = lines.first, lines.count >= 2 else {
            return .failure(Failure(status: 400, message: "no request line"))
        }
        guard lines.count - 2 <= limits.maximumHeaderCount else {
            return .failure(Failure(status: 431, message: "more than \(limits.maximumHeaderCount) header fields"))
        }
        // The request line: method SP target SP HTTP/1.x
        guard let firstSpace = requestLine.firstIndex(of: 0x20),
              let lastSpace = requestLine.lastIndex(of: 0x20), lastSpace > firstSpace
        else { return .failure(Failure(status: 400, message: "a malformed request line")) }
        let method = UnsafeRawBufferPointer(rebasing: requestLine[..<firstSpace])
        let target = UnsafeRawBufferPointer(rebasing: requestLine[(firstSpace + 1)..<lastSpace])
        let version = UnsafeRawBufferPointer(rebasing: requestLine[(lastSpace + 1)...])
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else {
            return .failure(Failure(status: 400, message: "a malformed request method"))
        }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(Failure(status: 400, message: "a malformed request target"))
        }
        guard version.count == 8, version.starts(with: "HTTP/".utf8), isDigit(version[5]), version[6] == UInt8(ascii: "."),
              isDigit(version[7])
        else { return .failure(Failure(status: 400, message: "a malformed HTTP version")) }
        guard version[5] == UInt8(ascii: "1") else {
            return .failure(Failure(status: 505, message: "only HTTP/1.0 and HTTP/1.1 are supported"))
        }
        let targetText = String(decoding: target, as: UTF8.self)
        guard targetText.hasPrefix("/") || targetText == "*" || targetText.lowercased().hasPrefix("http://")
            || targetText.lowercased().hasPrefix("https://")
        else { return .failure(Failure(status: 400, message: "a malformed request target")) }
        var head = HTTPRequestHead(
            method: String(decoding: method, as: UTF8.self), target: targetText,
            minorVersion: Int(version[7] - UInt8(ascii: "0")), headers: [])
        head.headers.reserveCapacity(lines.count - 2)
        for line in lines[1..<(lines.count - 1)] {
            // obs-fold (a line that starts with a blank) is refused (RFC 9112 §5.2).
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
                return .failure(Failure(status: 400, message: "a malformed header field"))
            }
            let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
            guard name.allSatisfy(isTokenByte) else {
                return .failure(Failure(status: 400, message: "a malformed header field name"))
            }
            let value = UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])
            guard value.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 || $0 >= 0x80 }) else {
                return .failure(Failure(status: 400, message: "a control character in a header field"))
            }
            head.headers.append(HTTPRequest.Header(
                String(decoding: name, as: UTF8.self).lowercased(),
                String(decoding: value, as: UTF8.self).trimmingBlanks()))
        }
        switch bodyFraming(of: head, limits: limits) {
        case .success(let framing): head.bodyFraming = framing
        case .failure(var failure):
            failure.path = head.path
            return .failure(failure)
        }
        return .success(head)
    }

    /// How the body of `head` is delimited (RFC 9112 §6.3), refusing what could be read
    /// two ways (both `Content-Length` and `Transfer-Encoding`, differing lengths).
    private static func bodyFraming(of head: HTTPRequestHead, limits: Limits) -> Result<HTTPRequestHead.BodyFraming, Failure> {
        let codings = head.tokens("transfer-encoding")
        let lengths = head.headers.filter { $0.name == "content-length" }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingBlanks() }
        if !codings.isEmpty {
            guard lengths.isEmpty else {
                return .failure(Failure(status: 400, message: "both Content-Length and Transfer-Encoding"))
            }
            guard head.minorVersion >= 1 else {
                return .failure(Failure(status: 400, message: "Transfer-Encoding in an HTTP/1.0 request"))
            }
            guard codings == ["chunked"] else {
                return .failure(Failure(status: 501, message: "only the chunked transfer coding is supported"))
            }
            return .success(.chunked)
        }
        guard let first = lengths.first else { return .success(.none) }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
              first.utf8.allSatisfy(isDigit), let length = Int(first)
        else { return .failure(Failure(status: 400, message: "a malformed Content-Length")) }
        guard length <= limits.maximumBodySize else {
            return .failure(Failure(status: 413, message: "the body is larger than \(limits.maximumBodySize) bytes"))
        }
        return .success(length == 0 ? .none : .length(length))
    }

    // MARK: - Chunked bodies

    private mutating func readLine(_ input: UnsafeRawBufferPointer, from offset: inout Int, limit: Int) -> Bool? {
        while offset < input.count {
            let byte = input[offset]
            offset += 1
            if byte == 0x0A {
                if lineBytes.last == 0x0D { lineBytes.removeLast() }
                return true
            }
            lineBytes.append(byte)
            if lineBytes.count > limit { return nil }
        }
        return false
    }

    private mutating func parseChunkSize(_ input: UnsafeRawBufferPointer, from offset: inout Int) -> Event {
        guard let complete = readLine(input, from: &offset, limit: 1024) else {
            return fail(400, "a chunk-size line longer than 1024 bytes")
        }
        guard complete else { return .needMore }
        // chunk-size [ ; chunk-ext ]: the extensions are ignored.
        let sizeText = lineBytes.prefix { $0 != UInt8(ascii: ";") }
        let digits = Array(sizeText).trimmingTrailingBlanks()
        lineBytes.removeAll(keepingCapacity: true)
        guard !digits.isEmpty, digits.count <= 15, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16),
              size >= 0
        else { return fail(400, "a malformed chunk size") }
        guard bodyBytes + size <= limits.maximumBodySize else {
            return fail(413, "the body is larger than \(limits.maximumBodySize) bytes")
        }
        bodyBytes += size
        if size == 0 {
            state = .trailers
            return parseTrailers(input, from: &offset)
        }
        state = .chunkData(remaining: size)
        return parse(input, from: &offset)
    }

    private mutating func parseChunkDataEnd(_ input: UnsafeRawBufferPointer, from offset: inout Int) -> Event {
        guard let complete = readLine(input, from: &offset, limit: 2) else {
            return fail(400, "chunk data longer than its size")
        }
        guard complete else { return .needMore }
        guard lineBytes.isEmpty else { return fail(400, "chunk data longer than its size") }
        state = .chunkSize
        return parse(input, from: &offset)
    }

    private mutating func parseTrailers(_ input: UnsafeRawBufferPointer, from offset: inout Int) -> Event {
        while true {
            let before = offset
            let result = readLine(input, from: &offset, limit: limits.maximumHeadSize)
            trailerBytes += offset - before
            guard trailerBytes <= limits.maximumHeadSize, let complete = result else {
                return fail(431, "trailer fields larger than \(limits.maximumHeadSize) bytes")
            }
            guard complete else { return .needMore }
            let empty = lineBytes.isEmpty
            lineBytes.removeAll(keepingCapacity: true)
            if empty {
                finishRequest()
                return .end
            }
        }
    }

    // MARK: - Characters

    /// RFC 9110 `tchar`.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}

extension Array where Element == UInt8 {
    /// The bytes without trailing spaces and tabs.
    fileprivate func trimmingTrailingBlanks() -> [UInt8] {
        var copy = self
        while let last = copy.last, last == 0x20 || last == 0x09 { copy.removeLast() }
        return copy
    }
}
