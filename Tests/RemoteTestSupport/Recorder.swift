import Foundation
import HubClient
import HubEngine
import HubValue
import NetworkTestSupport

/// What a recording subscriber of a remote subscription saw.
public enum Recorded: Sendable, Equatable {
    case value(Value)
    case finished
    case failed(HubClientError)

    /// The failure, when it is one.
    public var failure: HubClientError? {
        if case let .failed(error) = self { return error }
        return nil
    }
}

/// A subscription ended while a value was expected.
public struct UnexpectedEvent: Error {
    public var event: Recorded
    public var expected: String
}

/// A subscriber of a remote subscription (a ``HubPublisher``) that records its events
/// (pushed from the client's loop) and lets the test request more or cancel; the one
/// recorder of the client, scenario and cluster tests.
public final class Recorder: RemoteRecorder<Value, Recorded>, @unchecked Sendable {
    /// A recorder that asks for `demand` when subscribed (more with ``request(_:)``).
    public init(demand: Subscribers.Demand = .unlimited) {
        super.init(demand: demand, recorded: Recorded.value, finished: .finished, failed: Recorded.failed)
    }

    /// The next value; throws ``TimedOut`` after 10 s, or ``UnexpectedEvent`` when the
    /// subscription ended instead.
    public func next(_ what: String = "a value") async throws -> Value {
        switch try await events.next(what) {
        case let .value(value): return value
        case let other: throw UnexpectedEvent(event: other, expected: what)
        }
    }

    /// The next `count` events' values (fails on anything else).
    public func values(_ count: Int, timeout: Duration = .seconds(15)) async throws -> [Value] {
        try await events.next(count, timeout: timeout, "\(count) values").map { event in
            guard case .value(let value) = event else { throw UnexpectedEvent(event: event, expected: "\(count) values") }
            return value
        }
    }
}
