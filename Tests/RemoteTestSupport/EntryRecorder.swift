import Foundation
import HubClient
import HubEngine
import NetworkTestSupport

/// What an entry recorder saw.
public enum RecordedEntry: Sendable, Equatable {
    case entry(HubEntry)
    case finished
    case failed(HubClientError)
}

/// Something arrived where nothing was expected, or not what was.
public struct UnexpectedEntry: Error, CustomStringConvertible {
    public var event: RecordedEntry
    public var expected: String
    public var description: String { "expected \(expected), got \(event)" }
}

/// A subscriber of a remote subscription's entries (value, offset, epoch) that records
/// them with the demand it is given, and lets the test request more; the one entry
/// recorder of the client-resume and cluster-history tests.
public final class EntryRecorder: RemoteRecorder<HubEntry, RecordedEntry>, @unchecked Sendable {
    /// A recorder that asks for `demand` when subscribed.
    public init(demand: Subscribers.Demand) {
        super.init(demand: demand, recorded: RecordedEntry.entry, finished: .finished, failed: RecordedEntry.failed)
    }

    /// Asks for `count` more.
    public func request(_ count: Int) {
        request(.max(count))
    }

    /// The next `count` entries (throws on anything else).
    public func entries(_ count: Int, timeout: Duration = .seconds(15)) async throws -> [HubEntry] {
        try await events.next(count, timeout: timeout, "\(count) entries").map { event in
            guard case .entry(let entry) = event else { throw UnexpectedEntry(event: event, expected: "an entry") }
            return entry
        }
    }

    /// Throws if anything arrives within `duration`.
    public func expectNothing(for duration: Duration) async throws {
        do {
            let event = try await events.next(timeout: duration, "nothing")
            throw UnexpectedEntry(event: event, expected: "nothing")
        } catch is TimedOut {}
    }
}
