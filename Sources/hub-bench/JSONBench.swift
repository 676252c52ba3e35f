import Foundation
import HubValue

/// Benchmarks ``HubValue/Value``'s JSON reader and writer against Foundation's
/// `JSONSerialization` on typical protocol-v1 messages.
///
/// For every message it measures parsing (bytes to a value) and writing (a
/// value to bytes) separately, after a warm-up, for at least 0.3 s each, and
/// prints one line per case:
/// `CASE <name> hub_ns=X foundation_ns=Y ratio=Z` (nanoseconds per message;
/// ratio = foundation / hub).
enum JSONBench {
    /// A named message in its JSON text.
    struct Message {
        let name: String
        let text: String
    }

    /// Runs every case and prints the results on standard output.
    static func run() {
        for message in messages() {
            let bytes = Array(message.text.utf8)
            let data = Data(bytes)
            guard let value = try? Value.parse(bytes) else {
                fatalError("benchmark message \(message.name) is not valid JSON")
            }
            guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
                fatalError("Foundation cannot parse benchmark message \(message.name)")
            }

            let parseHub = measure {
                blackhole(try? Value.parse(bytes))
            }
            let parseFoundation = measure {
                blackhole(try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
            }
            report("\(message.name)_parse", hub: parseHub, foundation: parseFoundation)

            let writeHub = measure {
                blackhole(value.jsonBytes())
            }
            let writeFoundation = measure {
                blackhole(try? JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed]))
            }
            report("\(message.name)_write", hub: writeHub, foundation: writeFoundation)
        }
    }

    private static func report(_ name: String, hub: Double, foundation: Double) {
        let ratio = foundation / hub
        print("CASE \(name) hub_ns=\(format(hub, digits: 1)) foundation_ns=\(format(foundation, digits: 1)) ratio=\(format(ratio, digits: 2))")
    }

    private static func format(_ x: Double, digits: Int) -> String {
        String(format: "%.\(digits)f", x)
    }

    /// Nanoseconds per call of `body`: a warm-up of about 50 ms, then batches
    /// until at least 0.3 s have been measured.
    private static func measure(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        // Warm-up, and a first estimate of the batch size.
        var iterations = 0
        let warmupStart = clock.now
        while clock.now - warmupStart < .milliseconds(50) {
            for _ in 0..<16 { body() }
            iterations += 16
        }
        let batch = max(16, iterations / 5)
        var total = Duration.zero
        var count = 0
        while total < .milliseconds(300) {
            let start = clock.now
            for _ in 0..<batch { body() }
            total += clock.now - start
            count += batch
        }
        let (seconds, attoseconds) = total.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        return nanoseconds / Double(count)
    }

    /// The protocol-v1 messages measured.
    static func messages() -> [Message] {
        [
            Message(name: "next", text: #"{"op":"next","id":17,"value":{"symbol":"ACME","price":101.5,"qty":300,"tags":["a","b"]}}"#),
            Message(
                name: "subscribe",
                text: #"{"op":"subscribe","id":42,"pipeline":"prices | filter(price > 100) | map(price)","demand":"unlimited","batch":true,"buffer":1000,"overflow":"dropOldest"}"#
            ),
            Message(name: "send_1k", text: sendMessage()),
            // What scripts/bench-durable-vs-jetstream sends: a 64-B or a 1-KiB string.
            Message(name: "send_64_text", text: #"{"op":"send","to":"bench","value":"\#(String(repeating: "x", count: 62))","ack":7}"#),
            Message(name: "send_1k_text", text: #"{"op":"send","to":"bench","value":"\#(String(repeating: "x", count: 1022))","ack":7}"#),
            Message(name: "next_16k", text: arrayHeavyMessage()),
        ]
    }

    /// A `send` whose value is a nested object of about 1 KiB.
    static func sendMessage() -> String {
        var orders: [String] = []
        for k in 0..<6 {
            orders.append(
                #"{"orderId":\#(900_000 + k),"side":"\#(k % 2 == 0 ? "buy" : "sell")","price":\#(100.25 + Double(k) * 0.5),"qty":\#(100 * (k + 1)),"flags":{"ioc":\#(k % 3 == 0),"hidden":false},"venue":"XNAS"}"#
            )
        }
        return #"{"op":"send","to":"orders.book","ack":7,"value":{"book":"ACME","ts":1763780000123,"seq":88123,"meta":{"source":"feed-a","region":"eu-west","note":"caf\u00e9 \"quoted\""},"orders":[\#(orders.joined(separator: ","))]}}"#
    }

    /// A batched `next` whose values are about 16 KiB of mostly arrays of numbers.
    static func arrayHeavyMessage() -> String {
        var rows: [String] = []
        var k = 0
        var length = 0
        while length < 16 * 1024 {
            let row = "[\(k),\(Double(k) * 1.25 + 0.1),\(1_000_000 + k * 7),\(k % 5 == 0 ? "null" : "true"),\"t\(k)\"]"
            rows.append(row)
            length += row.utf8.count + 1
            k += 1
        }
        return #"{"op":"next","id":3,"values":[\#(rows.joined(separator: ","))]}"#
    }
}
