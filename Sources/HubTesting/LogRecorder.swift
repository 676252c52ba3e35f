import Foundation
import Logging

/// Keeps what is logged through its ``logger()``, for tests that check that something
/// was logged (a refused value, a pipeline's failure). Thread-safe: a broker logs from its
/// event loop while the test reads.
public final class LogRecorder: @unchecked Sendable {
    /// One log entry: its level, message and metadata (values as strings).
    public struct Entry: Sendable {
        /// The level.
        public var level: Logger.Level
        /// The message.
        public var message: String
        /// The logger's and the entry's metadata, as strings.
        public var metadata: [String: String]
    }

    private let lock = NSLock()
    private var recorded: [Entry] = []

    /// Nothing recorded yet.
    public init() {}

    /// Everything logged so far.
    public var entries: [Entry] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    /// The entries with `message`.
    public func entries(_ message: String) -> [Entry] {
        entries.filter { $0.message == message }
    }

    /// The entries with `message` once `condition` holds for them, or when `timeout`
    /// has passed (for what a broker logs on one thread after a client saw its effect on
    /// another, such as a relayed connection's close).
    public func entries(
        _ message: String, timeout: Duration = .seconds(10), until condition: ([Entry]) -> Bool
    ) async -> [Entry] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let found = entries(message)
            if condition(found) || clock.now >= deadline { return found }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// A logger that records here.
    public func logger() -> Logger {
        Logger(label: "hub.test") { _ in Handler(recorder: self) }
    }

    fileprivate func record(_ entry: Entry) {
        lock.lock()
        recorded.append(entry)
        lock.unlock()
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            if let extra = event.metadata { all.merge(extra) { $1 } }
            recorder.record(Entry(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}
