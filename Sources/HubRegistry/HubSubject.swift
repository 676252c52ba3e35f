import HubEngine
import HubValue
import HubWire

/// A named subject of the hub: a passthrough or a current-value subject of `Value`,
/// with the buffer its subscribers get unless they ask for another.
///
/// A subject with ``history`` stores each value it is sent in its log before its
/// subscribers get it, with its offset (see ``SubjectHistory``); its ``publisher``
/// of values is then the history's entries without their offsets.
public final class HubSubject {
    /// Which Combine subject backs it.
    public enum Kind: String, Hashable, Sendable {
        /// A `PassthroughSubject`: no value kept.
        case passthrough
        /// A `CurrentValueSubject`: new subscribers get the current value first.
        case currentValue
    }

    /// The subject's name.
    public let name: String
    /// Which Combine subject backs it.
    public let kind: Kind
    /// The buffer size its subscribers get by default.
    public let bufferSize: Int
    /// The overflow policy its subscribers get by default.
    public let overflow: OverflowPolicy
    /// The JSON Schema every value sent to it must match, if any.
    public let schema: JSONSchema?
    /// Its counters for the metrics (the hub's bounded table hands them out).
    public internal(set) var counters: NameCounters
    /// The value it started with (current-value subjects), for a reset by `delete`.
    public let initialValue: Value?
    /// Whether it was declared (configuration, or the hub's own), not created on first use:
    /// `delete` then puts a fresh one with the same settings in its place.
    public internal(set) var isDeclared = false
    /// Whether it was used (resolved by name or published into) since the hub's last
    /// sweep of idle names (``Hub/sweepIdleNames()``).
    public internal(set) var wasUsed = true
    /// Whether the hub removed it as idle (a holder that publishes into it again is
    /// redirected to the subject now registered under its name).
    public internal(set) var isRemoved = false
    /// The failure it ended with, if it failed (its `error` value).
    public private(set) var failure: Value?

    /// The overflow policy of a subscription that asked for `requested` (`nil`: the
    /// subject's own): the hub's buffer and the server's pacing of a `block` subscriber
    /// follow the same one.
    public func overflowPolicy(asked requested: OverflowPolicy?) -> OverflowPolicy {
        requested ?? overflow
    }

    /// Whether a subscriber's buffer is full, when its subscribers' overflow policy is
    /// ``OverflowPolicy/block``: its publishers are then slowed down.
    public let congestion = SubjectCongestion()

    /// Its history, when it keeps one (configuration `history`, or `durable`).
    public let history: SubjectHistory?

    /// Its table, when it is a table subject (configuration `kind: table`): the latest value
    /// of each key, kept from its history, which is the table's changelog.
    public let table: SubjectTable?

    private let passthrough: PassthroughSubject<Value, HubError>?
    private let current: CurrentValueSubject<Value, HubError>?

    /// A subject named `name`; `initialValue` makes it a current-value subject.
    public init(
        name: String, initialValue: Value? = nil, bufferSize: Int = 1000, overflow: OverflowPolicy = .error, schema: JSONSchema? = nil
    ) {
        self.name = name
        self.bufferSize = bufferSize
        self.overflow = overflow
        self.schema = schema
        self.initialValue = initialValue
        counters = NameCounters(name: name)
        history = nil
        table = nil
        if let initialValue {
            kind = .currentValue
            current = CurrentValueSubject(initialValue)
            passthrough = nil
        } else {
            kind = .passthrough
            passthrough = PassthroughSubject()
            current = nil
        }
    }

    /// A subject named `name` keeping its history in `log` (retained per `retention`);
    /// `initialValue` makes it a current-value subject, whose value comes back from the
    /// log when the log has one (a durable subject after a restart). With `table` it is a
    /// table subject bounded by it (no initial value; the log must keep the latest value
    /// per key): its table starts with the log's rows.
    public init(
        name: String, initialValue: Value? = nil, bufferSize: Int = 1000, overflow: OverflowPolicy = .error,
        schema: JSONSchema? = nil, log: any SubjectLog, retention: HistoryRetention, isDurable: Bool,
        table: SubjectTable.Limits? = nil
    ) {
        self.name = name
        self.bufferSize = bufferSize
        self.overflow = overflow
        self.schema = schema
        self.initialValue = initialValue
        counters = NameCounters(name: name)
        kind = initialValue == nil ? .passthrough : .currentValue
        let history = SubjectHistory(
            log: log, retention: retention, isDurable: isDurable, initialValue: table == nil ? initialValue : nil)
        self.history = history
        passthrough = nil
        current = nil
        if let table {
            let subjectTable = SubjectTable(name: name, limits: table, restored: log.latestPerKey)
            self.table = subjectTable
            history.beforeDelivery = { [unowned subjectTable] entry in subjectTable.apply(entry) }
        } else {
            self.table = nil
        }
    }

    /// Whether the subject has completed or failed (or will, once the values it is
    /// storing have been delivered).
    public var isCompleted: Bool { history?.isCompleted ?? passthrough?.isCompleted ?? current!.isCompleted }

    /// The number of live subscribers.
    public var subscriberCount: Int { history?.subscriberCount ?? passthrough?.subscriberCount ?? current!.subscriberCount }

    /// The current value of a current-value subject.
    public var currentValue: Value? { history?.currentEntry?.value ?? current?.value }

    /// Publishes `value` to the subscribers; with history, stores it first.
    public func send(_ value: Value) {
        send(value, whenStored: nil)
    }

    /// Publishes `value` to the subscribers. Without history it is delivered now and
    /// `whenStored` gets `nil` first; with history it is stored first, and `whenStored`
    /// gets its offset (or the store's error, and the value goes nowhere) before the
    /// subscribers get it.
    ///
    /// A table subject takes only changes it has room for (``SubjectTable``): another
    /// value goes nowhere, and `whenStored` gets the refusal.
    public func send(_ value: Value, whenStored: ((Result<UInt64?, HubError>) -> Void)?) {
        if let table, let history {
            let change: TableChange
            do {
                change = try table.admit(value)
            } catch {
                whenStored?(.failure(error))
                return
            }
            history.append(change.json) { [weak table] result in
                table?.release(change)
                whenStored?(result.map(Optional.some))
            }
            return
        }
        if let history {
            history.append(value, completion: whenStored.map { done in { done($0.map(Optional.some)) } })
            return
        }
        whenStored?(.success(nil))
        if let passthrough { passthrough.send(value) } else { current!.send(value) }
    }

    /// Finishes or fails the subject (with history: after the values it is storing).
    public func send(completion: Subscribers.Completion<HubError>) {
        if case .failure(let error) = completion, !isCompleted { failure = error.data ?? .null }
        if let history {
            history.finish(completion)
            return
        }
        if let passthrough { passthrough.send(completion: completion) } else { current!.send(completion: completion) }
    }

    /// Fails the subject with the JSON value `error`: subscribers get code `failed` with it as `data`.
    public func fail(with error: Value) {
        send(completion: .failure(.failed(error, message: "subject '\(name)' failed")))
    }

    /// The subject as a publisher, unbuffered (Combine's demand rules: a subscriber
    /// without demand misses values).
    public var publisher: AnyPublisher<Value, HubError> {
        if let history { return history.entries.map(\.value).eraseToAnyPublisher() }
        if let passthrough { return passthrough.eraseToAnyPublisher() }
        return current!.eraseToAnyPublisher()
    }
}
