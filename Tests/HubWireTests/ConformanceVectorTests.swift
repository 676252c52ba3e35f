import Foundation
import HubValue
import Testing

/// Runs the messages of the conformance vectors (Protocol/conformance/vectors)
/// through the decoder and checks every answer that the protocol layer alone
/// decides: the `bad_message`, `unknown_op` and `invalid_demand` errors with
/// their `id`/`ack` (or their absence), and the `subscribed`/`ack`/`catalog`
/// that a well-formed message leads to.
@Suite("Wire conformance vectors")
struct ConformanceVectorTests {
    static let vectorsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Protocol/conformance/vectors")

    static let wireCodes: Set<String> = ["bad_message", "unknown_op", "invalid_demand"]

    static var vectorNames: [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: vectorsDirectory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.sorted()
    }

    @Test func theVectorsAreThere() {
        for name in ["bad-fields.json", "bad-messages.json", "unknown-op.json", "subscribe-invalid-demand.json",
                     "request-invalid-boolean.json", "request-invalid-fraction.json", "request-invalid-negative.json",
                     "request-invalid-null.json", "request-invalid-string.json", "request-invalid-zero.json",
                     "request-missing-n.json", "request-integral-float-accepted.json", "unknown-fields-ignored.json"] {
            #expect(Self.vectorNames.contains(name), "\(name)")
        }
    }

    @Test(arguments: ConformanceVectorTests.vectorNames)
    func vector(file: String) throws {
        let data = try Data(contentsOf: Self.vectorsDirectory.appendingPathComponent(file))
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "{{uid}}", with: "u1")
        let steps = try #require(try Value.parse(text)["steps"]?.arrayValue)
        for (index, step) in steps.enumerated() {
            let message: String
            if let sent = step["send"] ?? step["sendFragmented"] {
                message = sent.jsonString()
            } else if let raw = step["sendRaw"]?.stringValue {
                message = raw
            } else {
                continue
            }
            let conn = step["conn"]?.stringValue ?? "a"
            let next = steps[(index + 1)...].first { ($0["conn"]?.stringValue ?? "a") == conn }
            let expected = next?["expect"]
            let outcome = WireOutcome.of(message)
            let context = Comment(rawValue: "\(file) step \(index): \(message) -> \(outcome.map(\.description) ?? "nothing")")

            if let outcome, outcome.op == "error" {
                // A wire-level error must be exactly what the vector expects next.
                let pattern = try #require(expected?.objectValue, context)
                #expect(pattern["op"] == "error", context)
                #expect(pattern["code"]?.stringValue == outcome.code, context)
                Self.check(pattern["id"], outcome.id.map { Int64($0) }, context)
                Self.check(pattern["ack"], outcome.ack, context)
            } else if let pattern = expected?.objectValue {
                if pattern["op"] == "error", let code = pattern["code"]?.stringValue, Self.wireCodes.contains(code) {
                    Issue.record("the vector expects \(code) but the message decodes fine; \(context)")
                }
                // subscribed / ack / catalog answers must carry the decoded id or ack.
                if let outcome, pattern["op"]?.stringValue == outcome.op {
                    Self.check(pattern["id"], outcome.id.map { Int64($0) }, context)
                    Self.check(pattern["ack"], outcome.ack, context)
                }
            }
        }
    }

    /// Compares a pattern's `id`/`ack` entry with ours: `"$absent"` wants none,
    /// an integer wants that one, no entry checks nothing.
    static func check(_ pattern: Value?, _ ours: Int64?, _ context: Comment) {
        guard let pattern else { return }
        if pattern == "$absent" {
            #expect(ours == nil, context)
        } else if let expected = pattern.intValue {
            #expect(ours == expected, context)
        }
    }
}
