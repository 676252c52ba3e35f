import HubEngine
import Testing
import OpenCombine
import Logging
import HubTesting

/// What `handleEvents` observes and what `print` logs, HubEngine against OpenCombine 0.14.0,
/// on random scripts.
@Suite("SequenceOperators: handleEvents and print against OpenCombine")
struct SeqOpsObserverDifferentialTests {
    private static func script(seed: Int) -> (steps: [ScriptStep<Int>], initial: Int?, perValue: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let steps = Differential.randomScript(length: 16, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        return (steps, initial, perValue)
    }

    private static func describe(_ max: Int?) -> String { max.map { "max(\($0))" } ?? "unlimited" }

    @Test(arguments: 0..<100)
    func handleEventsObservesTheSameEvents(seed: Int) {
        let (steps, initial, perValue) = Self.script(seed: seed)
        let hubLog = SeqOpsEventLog()
        let ocLog = SeqOpsEventLog()
        let result = Differential.run(
            steps, initialDemand: initial, demandPerValue: perValue,
            hub: { subject in
                subject.handleEvents(
                    receiveSubscription: { _ in hubLog.entries.append("subscription") },
                    receiveOutput: { hubLog.entries.append("output \($0)") },
                    receiveCompletion: { hubLog.entries.append("completion \($0)") },
                    receiveCancel: { hubLog.entries.append("cancel") },
                    receiveRequest: { hubLog.entries.append("request \(Self.describe($0.max))") })
            },
            oc: { subject in
                subject.handleEvents(
                    receiveSubscription: { _ in ocLog.entries.append("subscription") },
                    receiveOutput: { ocLog.entries.append("output \($0)") },
                    receiveCompletion: { completion in
                        switch completion {
                        case .finished: ocLog.entries.append("completion finished")
                        case .failure(let error): ocLog.entries.append("completion failure(\(error))")
                        }
                    },
                    receiveCancel: { ocLog.entries.append("cancel") },
                    receiveRequest: { ocLog.entries.append("request \(Self.describe($0.max))") })
            })
        #expect(result.hub == result.oc, "seed \(seed): \(steps)")
        #expect(hubLog.entries == ocLog.entries, "seed \(seed): \(steps)")
    }

    @Test(arguments: 0..<100)
    func printLogsTheSameLines(seed: Int) {
        let (steps, initial, perValue) = Self.script(seed: seed)
        let capture = SeqOpsLogCapture()
        let stream = SeqOpsTextStream()
        let result = Differential.run(
            steps, initialDemand: initial, demandPerValue: perValue,
            hub: { $0.print("S", to: capture.logger) },
            oc: { $0.print("S", to: stream) })
        #expect(result.hub == result.oc, "seed \(seed): \(steps)")
        // The subscription line names each engine's own subscription type; compare the rest.
        #expect(capture.messages.first?.hasPrefix("S: receive subscription: (") == true)
        #expect(Array(capture.messages.dropFirst()) == Array(stream.lines.dropFirst()), "seed \(seed): \(steps)")
    }
}

/// A `TextOutputStream` for OpenCombine's `print`, split into lines.
final class SeqOpsTextStream: TextOutputStream {
    private var text = ""
    var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    func write(_ string: String) { text += string }
}
