import Foundation
import HubValue

/// The figures of one benchmark case.
struct BenchResult: Sendable {
    /// `max`, `rate` or `large`.
    var mode: String
    /// Subscriber connections.
    var subscribers: Int
    /// The published values' JSON size (bytes, approximate).
    var size: Int
    /// Whether subscribers asked for the batch form of `next`.
    var batch: Bool
    /// The target rate (`rate` mode), messages a second.
    var targetRate: Double?
    /// Seconds measured.
    var seconds: Double
    /// Messages published in the window.
    var published: Int
    /// Values received in the window, summed over the subscribers.
    var delivered: Int
    /// The latency histogram of the window.
    var latency: BenchHistogram
    /// Server-side figures over the window (in-process server only).
    var server: ServerFigures?
    /// CPU seconds the in-process broker's loop thread used in the window.
    var serverCPU: Double?
    /// CPU seconds the load generator's loop threads used in the window.
    var loadCPU: Double?
    /// What went wrong, if anything.
    var failures: [String]

    /// The broker's CPU nanoseconds per delivered value.
    var serverNanosecondsPerDelivery: Double? {
        guard let serverCPU, delivered > 0 else { return nil }
        return serverCPU * 1e9 / Double(delivered)
    }

    /// Server counters over a window.
    struct ServerFigures: Sendable {
        var writeCalls: Int
        var messagesWritten: Int
        var valuesEncoded: Int
        var encodingCacheHits: Int
    }

    var publishedPerSecond: Double { seconds > 0 ? Double(published) / seconds : 0 }
    var deliveredPerSecond: Double { seconds > 0 ? Double(delivered) / seconds : 0 }

    /// One readable line.
    var line: String {
        var text = "\(mode.padding(toLength: 5, withPad: " ", startingAt: 0)) S=\(String(subscribers).leftPad(3))"
        text += "  \(BenchResult.bytes(size).leftPad(8))  \(batch ? "batch " : "single")"
        if let targetRate { text += "  rate \(Int(targetRate))/s" }
        text += "  published \(BenchResult.count(publishedPerSecond).leftPad(9))/s"
        text += "  delivered \(BenchResult.count(deliveredPerSecond).leftPad(10))/s"
        text += "  latency p50 \(BenchResult.time(latency.percentile(0.5)))"
        text += " p99 \(BenchResult.time(latency.percentile(0.99)))"
        text += " p99.9 \(BenchResult.time(latency.percentile(0.999)))"
        text += " max \(BenchResult.time(latency.total > 0 ? latency.maximum : nil))"
        if let serverCPU, let perDelivery = serverNanosecondsPerDelivery {
            text += String(format: "  [server CPU %.0f%%, %.0f ns/delivery", 100 * serverCPU / seconds, perDelivery)
            if let loadCPU { text += String(format: "; load generator CPU %.0f%%", 100 * loadCPU / seconds) }
            text += "]"
        }
        if let server, server.writeCalls > 0 {
            text += String(format: "  [server: %.1f msgs/write, encode hits %d/%d]",
                           Double(server.messagesWritten) / Double(server.writeCalls),
                           server.encodingCacheHits, server.encodingCacheHits + server.valuesEncoded)
        }
        if !failures.isEmpty { text += "  FAILED: " + failures.joined(separator: "; ") }
        return text
    }

    /// The case as a JSON object.
    var json: Value {
        var object: Value.Object = [
            "mode": .string(mode), "subscribers": .int(Int64(subscribers)), "size": .int(Int64(size)),
            "batch": .bool(batch), "seconds": .double(seconds),
            "published": .int(Int64(published)), "delivered": .int(Int64(delivered)),
            "published_per_s": .double(publishedPerSecond.rounded()),
            "delivered_per_s": .double(deliveredPerSecond.rounded()),
            "latency_samples": .int(Int64(latency.total)),
        ]
        if let targetRate { object["rate"] = .double(targetRate) }
        func micros(_ nanoseconds: Int64?) -> Value {
            nanoseconds.map { .double((Double($0) / 100).rounded() / 10) } ?? .null
        }
        object["latency_us"] = .object([
            "p50": micros(latency.percentile(0.5)), "p99": micros(latency.percentile(0.99)),
            "p99_9": micros(latency.percentile(0.999)), "max": micros(latency.total > 0 ? latency.maximum : nil),
        ])
        if let server {
            object["server"] = .object([
                "write_calls": .int(Int64(server.writeCalls)), "messages_written": .int(Int64(server.messagesWritten)),
                "values_encoded": .int(Int64(server.valuesEncoded)),
                "encoding_cache_hits": .int(Int64(server.encodingCacheHits)),
            ])
        }
        if let serverCPU { object["server_cpu_s"] = .double((serverCPU * 1000).rounded() / 1000) }
        if let perDelivery = serverNanosecondsPerDelivery { object["server_ns_per_delivery"] = .double(perDelivery.rounded()) }
        if let loadCPU { object["load_cpu_s"] = .double((loadCPU * 1000).rounded() / 1000) }
        if !failures.isEmpty { object["failures"] = .array(failures.map(Value.string)) }
        return .object(object)
    }

    static func count(_ value: Double) -> String {
        let whole = Int(value.rounded())
        var digits = String(whole)
        var groups: [Substring] = []
        while digits.count > 3 {
            groups.insert(Substring(digits.suffix(3)), at: 0)
            digits.removeLast(3)
        }
        groups.insert(Substring(digits), at: 0)
        return groups.joined(separator: ",")
    }

    static func bytes(_ size: Int) -> String {
        if size >= 1 << 20, size % (1 << 20) == 0 { return "\(size >> 20) MiB" }
        if size >= 1 << 10, size % (1 << 10) == 0 { return "\(size >> 10) KiB" }
        return "\(size) B"
    }

    static func time(_ nanoseconds: Int64?) -> String {
        guard let nanoseconds else { return "-" }
        if nanoseconds < 1_000_000 { return String(format: "%.0f µs", Double(nanoseconds) / 1e3) }
        return String(format: "%.2f ms", Double(nanoseconds) / 1e6)
    }
}

extension String {
    /// The string right-aligned in `width` characters.
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
