import Foundation
import HubValue

/// How `hubcli stats` and `hubcli top` show a `$sys.stats` value: a summary block,
/// then one row per name (busiest first), aligned.
enum StatsView {
    /// The summary lines of a `$sys.stats` value.
    static func summary(_ stats: Value) -> [String] {
        let totals = stats["totals"] ?? .null
        let rates = stats["rates"] ?? .null
        var lines = [
            "uptime \(number(stats["uptime"]))s  connections \(number(stats["connections"]))  "
                + "subscriptions \(number(stats["subscriptions"]))  queued \(bytes(stats["queuedBytes"]))  "
                + "loop lag \(number(stats["loopLagMs"]))ms" + (stats["draining"] == .bool(true) ? "  DRAINING" : ""),
            "published \(number(totals["published"])) (\(number(rates["published"]))/s)  "
                + "delivered \(number(totals["delivered"])) (\(number(rates["delivered"]))/s)  "
                + "dropped \(number(totals["dropped"]))  overflows \(number(totals["overflows"]))",
            "in \(bytes(totals["bytesIn"])) (\(bytes(rates["bytesIn"]))/s)  out \(bytes(totals["bytesOut"])) "
                + "(\(bytes(rates["bytesOut"]))/s)  slow consumers \(number(totals["slowConsumerCloses"]))  "
                + "auth failures \(number(totals["authFailures"]))  protocol errors \(number(totals["protocolErrors"]))",
            "pipeline failures \(number(totals["pipelineFailures"])) (named pipelines \(number(totals["namedPipelineFailures"])))  "
                + "rate-limit closes \(number(totals["rateLimitCloses"]))  "
                + "connections refused \(number(totals["connectionRefusals"]))",
        ]
        lines.append("")
        return lines
    }

    /// The per-name table of a `$sys.stats` value: at most `limit` rows, busiest first.
    static func table(_ stats: Value, limit: Int = .max) -> [String] {
        let names = (stats["names"]?.arrayValue ?? []).filter {
            ($0["published"]?.intValue ?? 0) + ($0["delivered"]?.intValue ?? 0) > 0 || $0["subscribers"] != nil
        }
        let sorted = names.sorted {
            let a = ($0["publishedRate"]?.doubleValue ?? 0) + ($0["deliveredRate"]?.doubleValue ?? 0)
            let b = ($1["publishedRate"]?.doubleValue ?? 0) + ($1["deliveredRate"]?.doubleValue ?? 0)
            return a != b ? a > b : ($0["name"]?.stringValue ?? "") < ($1["name"]?.stringValue ?? "")
        }
        var rows = [["NAME", "KIND", "STATE", "SUBS", "PUB/S", "DELIV/S", "PUBLISHED", "DELIVERED", "DROPPED"]]
        for entry in sorted.prefix(limit) {
            rows.append([
                entry["name"]?.stringValue ?? "?", entry["kind"]?.stringValue ?? "-", entry["state"]?.stringValue ?? "-",
                entry["subscribers"].map { number($0) } ?? "-", number(entry["publishedRate"]),
                number(entry["deliveredRate"]), number(entry["published"]), number(entry["delivered"]),
                number(entry["dropped"]),
            ])
        }
        return align(rows)
    }

    /// Rows padded into columns.
    static func align(_ rows: [[String]]) -> [String] {
        guard let width = rows.first?.count else { return [] }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    /// A number as text (integers without a fraction, others with one decimal).
    static func number(_ value: Value?) -> String {
        switch value {
        case .int(let n)?: return String(n)
        case .double(let d)?: return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(format: "%.1f", d)
        case nil, .null?: return "-"
        case let other?: return other.jsonString()
        }
    }

    /// A byte count with a unit.
    static func bytes(_ value: Value?) -> String {
        guard let count = value?.doubleValue else { return "-" }
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = count
        var unit = 0
        while amount >= 1024, unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(Int64(amount))B" : String(format: "%.1f%@", amount, units[unit])
    }
}
