import FuzzDriver
@testable import HubTransport

// The server's HTTP/1.1 request parser on what a client sends, split where the input
// says: the same requests (heads, bodies, ends) or the same refusal however the bytes
// are cut, bodies and heads within the limits, and every refusal one of the statuses
// the parser promises.

let limits = HTTPRequestParser.Limits(
    maximumRequestLineLength: 512, maximumHeadSize: 1024, maximumHeaderCount: 20, maximumBodySize: 2048)

func parse(_ input: [UInt8], cuts: [Int]) -> [String] {
    var parser = HTTPRequestParser(limits: limits)
    var events: [String] = []
    var body = 0
    let bounds = Array(Set([0] + cuts.filter { $0 > 0 && $0 < input.count } + [input.count])).sorted()
    for (start, end) in zip(bounds, bounds.dropFirst()) {
        let piece = Array(input[start..<end])
        var failed = false
        piece.withUnsafeBytes { buffer in
            var offset = 0
            loop: while true {
                let before = offset
                switch parser.parse(buffer, from: &offset) {
                case .needMore:
                    precondition(offset == buffer.count, "needMore with bytes left")
                    break loop
                case .head(let head):
                    precondition(offset >= before)
                    precondition(head.headers.count <= limits.maximumHeaderCount)
                    events.append("head \(head.method) \(head.target) 1.\(head.minorVersion) \(head.headers) \(head.bodyFraming)")
                    body = 0
                case .body(let range):
                    precondition(range.lowerBound >= before && range.upperBound <= offset && !range.isEmpty)
                    body += range.count
                    precondition(body <= limits.maximumBodySize, "a body past the limit")
                    events.append("body \(Array(buffer[range]))")
                case .end:
                    events.append("end")
                case .failure(let failure):
                    precondition([400, 413, 414, 431, 501, 505].contains(failure.status), "status \(failure.status)")
                    events.append("failure \(failure.status)")
                    failed = true
                    break loop
                }
            }
        }
        if failed { break }
    }
    // Body pieces may be cut differently: compare their concatenation.
    var merged: [String] = []
    for event in events {
        if event.hasPrefix("body "), let last = merged.last, last.hasPrefix("body ") {
            merged[merged.count - 1] = last.dropLast() + ", " + event.dropFirst("body [".count)
        } else {
            merged.append(event)
        }
    }
    return merged
}

runFuzzer { bytes in
    guard !bytes.isEmpty else { return }
    let input = Array(bytes)
    let whole = parse(input, cuts: [])
    let cut = Int(bytes[0]) * 7 % input.count
    precondition(parse(input, cuts: [cut]) == whole, "a split at \(cut) parses differently")
    if input.count <= 300 {
        precondition(parse(input, cuts: Array(1..<input.count)) == whole, "byte by byte differs")
    }
}
