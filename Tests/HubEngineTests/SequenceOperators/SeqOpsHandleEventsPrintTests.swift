import Testing
import HubEngine
import HubTesting
import HubValue
import Logging

/// `handleEvents` and `print(_:to:)`.
@Suite("SequenceOperators: handleEvents and print")
struct SeqOpsHandleEventsPrintTests {
    private static func observed(_ log: SeqOpsEventLog, _ probe: DemandProbe<Int, TestError>)
        -> Publishers.HandleEvents<DemandProbe<Int, TestError>>
    {
        probe.handleEvents(
            receiveSubscription: { _ in log.entries.append("subscription") },
            receiveOutput: { log.entries.append("output \($0)") },
            receiveCompletion: { log.entries.append("completion \($0)") },
            receiveCancel: { log.entries.append("cancel") },
            receiveRequest: { log.entries.append("request \($0)") })
    }

    @Test func handleEventsSeesEveryEventInOrderAndPassesThemOn() {
        let log = SeqOpsEventLog()
        let probe = DemandProbe<Int, TestError>()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(2), demandPerValue: .max(1))
        recorder.onValue = { log.entries.append("downstream \($0)"); return .max(1) }
        Self.observed(log, probe).subscribe(recorder)
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(5) == .max(1))
        probe.send(completion: .failure(.oops))
        #expect(log.entries == [
            "subscription", "request max(2)", "output 5", "downstream 5", "request max(1)", "completion failure(oops)",
        ])
        #expect(recorder.events == [.subscription, .value(5), .failure(.oops)])
        recorder.cancel()
        #expect(log.entries.last == "completion failure(oops)")
        #expect(probe.cancellations == 0)
    }

    @Test func handleEventsCancelIsObservedOnceAndCancelsUpstream() {
        let log = SeqOpsEventLog()
        let probe = DemandProbe<Int, TestError>()
        let recorder = Self.observed(log, probe).record(initialDemand: .none)
        recorder.cancel()
        recorder.cancel()
        recorder.request(.max(1))
        probe.send(1)
        probe.send(completion: .finished)
        #expect(log.entries == ["subscription", "cancel"])
        #expect(probe.cancellations == 1)
        #expect(probe.requests == [])
        #expect(recorder.events == [.subscription])
    }

    @Test func handleEventsDoesNotReportNoDemandFromValues() {
        let log = SeqOpsEventLog()
        let probe = DemandProbe<Int, TestError>()
        _ = Self.observed(log, probe).record(initialDemand: .unlimited)
        probe.send(1)
        probe.send(completion: .finished)
        #expect(log.entries == ["subscription", "request unlimited", "output 1", "completion finished"])
    }

    @Test func printLogsEveryEventWithItsPrefix() {
        let capture = SeqOpsLogCapture()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.print("P", to: capture.logger).record(initialDemand: .max(2), demandPerValue: .max(1))
        probe.send(5)
        recorder.request(.unlimited)
        probe.send(completion: .failure(.oops))
        let messages = capture.messages
        #expect(messages.count == 6)
        #expect(messages.first?.hasPrefix("P: receive subscription: (") == true)
        #expect(Array(messages.dropFirst()) == [
            "P: request max: (2)",
            "P: receive value: (5)",
            "P: request max: (1) (synchronous)",
            "P: request unlimited",
            "P: receive error: (oops)",
        ])
        #expect(capture.levels.allSatisfy { $0 == .info })
        #expect(recorder.events == [.subscription, .value(5), .failure(.oops)])
        #expect(probe.requests == [.max(2), .unlimited])
    }

    @Test func printWithoutPrefixLogsFinishedAndCancel() {
        let capture = SeqOpsLogCapture()
        let recorder = [7].publisher.print(to: capture.logger).record(initialDemand: .max(1))
        #expect(Array(capture.messages.dropFirst()) == [
            "request max: (1)", "receive value: (7)", "request max: (0) (synchronous)", "receive finished",
        ])
        #expect(recorder.events == [.subscription, .value(7), .finished])

        let other = SeqOpsLogCapture()
        let probe = DemandProbe<Int, TestError>()
        let cancelled = probe.print("C", to: other.logger, level: .debug).record(initialDemand: .none)
        cancelled.cancel()
        cancelled.cancel()
        probe.send(1)
        // The second cancel is logged too (as in Combine) but has no effect.
        #expect(Array(other.messages.dropFirst()) == ["C: receive cancel", "C: receive cancel"])
        #expect(other.levels.allSatisfy { $0 == .debug })
        #expect(probe.cancellations == 1)
    }
}

/// A reference-typed list of observed events for closures to append to.
final class SeqOpsEventLog {
    var entries: [String] = []
}

/// A `Logger` whose handler keeps every message and level, for the `print` tests.
final class SeqOpsLogCapture: @unchecked Sendable {
    // Only touched from the test's own thread.
    private(set) var messages: [String] = []
    private(set) var levels: [Logger.Level] = []

    var logger: Logger {
        var logger = Logger(label: "seq-ops-print") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ message: String, level: Logger.Level) {
        messages.append(message)
        levels.append(level)
    }

    private struct Handler: LogHandler {
        let capture: SeqOpsLogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.append(event.message.description, level: event.level)
        }
    }
}
