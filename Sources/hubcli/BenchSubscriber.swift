import Glibc
import HubValue
import HubTransport

/// How a subscriber finds the publish timestamps in a `next` message.
enum BenchParse: String, Sendable, CaseIterable {
    /// Scan the raw bytes for the timestamp's marker (`memchr`, `memcmp`), parse no JSON.
    case scan
    /// Parse the whole message with `Value.parse` and read the values' timestamps.
    case value
}

/// The shape of the published values.
enum BenchShape: String, Sendable, CaseIterable {
    /// `{"ts":<ns>,"pad":"xx…"}`.
    case object
    /// `"ts:<ns>;xx…"`.
    case string

    /// The bytes right before the timestamp's digits.
    var marker: [UInt8] {
        switch self {
        case .object: Array(#""ts":"#.utf8)
        case .string: Array(#""ts:"#.utf8)
        }
    }
}

/// One subscriber connection of the load generator: subscribes to the case's subject
/// with unlimited demand and, for every value received, records the latency from its
/// publish timestamp. Confined to its loop.
final class BenchSubscriber: WebSocketConnectionHandler {
    private let index: Int
    private let run: BenchRun
    private unowned let loop: BenchLoop
    private let subscribeText: String
    private let parse: BenchParse
    private let shape: BenchShape
    private let marker: [UInt8]
    private var subscribed = false
    private var received = 0
    /// Called with each latency (ns) when set (the large-value case drives its
    /// publisher from here).
    var onValue: ((Int64) -> Void)?

    init(index: Int, run: BenchRun, loop: BenchLoop, subject: String, batch: Bool, parse: BenchParse, shape: BenchShape) {
        self.index = index
        self.run = run
        self.loop = loop
        self.parse = parse
        self.shape = shape
        marker = shape.marker
        subscribeText = #"{"op":"subscribe","id":1,"to":""# + subject + #"","demand":"unlimited""#
            + (batch ? #","batch":true}"# : "}")
    }

    func connectionDidOpen(_ connection: WebSocketConnection) {
        connection.send(text: subscribeText)
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard BenchSubscriber.hasPrefix(payload, BenchSubscriber.nextPrefix) else {
            other(payload)
            return
        }
        let now = EventLoop.monotonicNanoseconds()
        let measuring = run.measuring.load(ordering: .relaxed)
        var count = 0
        switch parse {
        case .scan:
            count = scan(payload) { stamp in
                record(now - stamp, measuring: measuring)
            }
        case .value:
            count = parseValues(payload) { stamp in
                record(now - stamp, measuring: measuring)
            }
        }
        received += count
        run.delivered[index].store(received)
    }

    @inline(__always)
    private func record(_ latency: Int64, measuring: Bool) {
        if measuring { loop.histogram.record(latency) }
        onValue?(latency)
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        if !run.tearingDown.load(ordering: .relaxed) {
            run.fail("subscriber \(index) closed: \(code.map { "\($0.rawValue)" } ?? "no code") \(reason)")
        }
        run.closed.increment()
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        run.fail("subscriber \(index) could not connect: \(error)")
        run.closed.increment()
    }

    /// A message other than `next`: `subscribed` makes the subscriber ready, `error` is a failure.
    private func other(_ payload: UnsafeRawBufferPointer) {
        let text = String(decoding: payload.prefix(300), as: UTF8.self)
        if text.hasPrefix(#"{"op":"subscribed""#) {
            if !subscribed {
                subscribed = true
                run.subscribed.increment()
            }
        } else if text.hasPrefix(#"{"op":"error""#) || text.hasPrefix(#"{"op":"complete""#) {
            run.fail("subscriber \(index): \(text)")
        }
    }

    private static let nextPrefix = Array(#"{"op":"next""#.utf8)

    private static func hasPrefix(_ payload: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        guard payload.count >= prefix.count, let base = payload.baseAddress else { return false }
        return prefix.withUnsafeBytes { memcmp(base, $0.baseAddress!, prefix.count) == 0 }
    }

    /// Finds every timestamp marker in `payload` and reads the digits after it; returns
    /// the number of values found. `memchr` looks for the marker's third byte (`s`, rare
    /// in a `next` envelope, unlike `"`), then the marker is compared around it.
    private func scan(_ payload: UnsafeRawBufferPointer, _ found: (Int64) -> Void) -> Int {
        guard let base = payload.baseAddress else { return 0 }
        let end = payload.count
        let anchor = 2
        var offset = anchor
        var count = 0
        marker.withUnsafeBytes { needle in
            let anchorByte = Int32(needle[anchor])
            while offset < end {
                guard let hit = memchr(base + offset, anchorByte, end - offset) else { break }
                let at = UnsafeRawPointer(hit) - base - anchor
                guard at + needle.count <= end else { break }
                guard memcmp(base + at, needle.baseAddress!, needle.count) == 0 else {
                    offset = at + anchor + 1
                    continue
                }
                var position = at + needle.count
                var stamp: Int64 = 0
                while position < end {
                    let digit = payload[position] &- UInt8(ascii: "0")
                    guard digit < 10 else { break }
                    stamp = stamp &* 10 &+ Int64(digit)
                    position += 1
                }
                found(stamp)
                count += 1
                offset = position + anchor
            }
        }
        return count
    }

    /// Parses the message as JSON and reads the timestamp of its `value` or of each of its
    /// `values`; returns the number of values.
    private func parseValues(_ payload: UnsafeRawBufferPointer, _ found: (Int64) -> Void) -> Int {
        guard let message = try? Value.parse(payload), case .object(let fields) = message else {
            run.fail("subscriber \(index): a next message is not a JSON object")
            return 0
        }
        if let value = fields["value"] {
            found(timestamp(of: value))
            return 1
        }
        guard case .array(let values)? = fields["values"] else { return 0 }
        for value in values { found(timestamp(of: value)) }
        return values.count
    }

    private func timestamp(of value: Value) -> Int64 {
        switch value {
        case .object(let object):
            if case .int(let stamp)? = object["ts"] { return stamp }
        case .string(let text):
            if text.hasPrefix("ts:") {
                return Int64(text.dropFirst(3).prefix { $0.isASCII && $0.isNumber }) ?? 0
            }
        default:
            break
        }
        return 0
    }
}
