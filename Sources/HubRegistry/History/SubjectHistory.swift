import HubEngine
import HubValue
import HubWire

/// The history side of a ``HubSubject``: its ``SubjectLog`` in a store, and the fan-out
/// of its committed values, each with its offset, to the subject's subscribers.
///
/// A value sent into the subject is appended to the log first; it reaches subscribers
/// when the log reports it committed (at once for the memory store; after the group
/// commit for a durable store), after the sender's acknowledgement. A `complete` or
/// `fail` waits for the values still being stored, so that subscribers get every
/// acknowledged value before the end. Loop-confined.
public final class SubjectHistory {
    /// The subject's log.
    public let log: any SubjectLog
    /// How much of it the store keeps.
    public let retention: HistoryRetention
    /// Whether the log survives restarts (a durable store's).
    public let isDurable: Bool
    /// The offset of the last value its subscribers have been given (0: none yet).
    public private(set) var lastOffset: UInt64

    /// What its live subscribers here can take now (see ``LiveDemand``).
    public private(set) var liveDemand: LiveDemand!

    private let passthrough: PassthroughSubject<HistoryEntry, HubError>?
    private let current: CurrentValueSubject<HistoryEntry, HubError>?
    /// Appends whose outcome is not known yet, and acknowledged values not yet delivered.
    private var unsettled = 0
    /// Offsets of this hub's appends acknowledged and not yet delivered: a store shared
    /// with other hubs also reports their values, which settle nothing here.
    private var acknowledged = Set<UInt64>()
    private var pendingCompletion: Subscribers.Completion<HubError>?

    /// The history of a subject over `log`; `initialValue` makes it a current-value
    /// subject, whose current value is the log's last value when it has one.
    init(log: any SubjectLog, retention: HistoryRetention, isDurable: Bool, initialValue: Value?) {
        self.log = log
        self.retention = retention
        self.isDurable = isDurable
        lastOffset = log.lastOffset
        if let initialValue {
            // A value restored from the store keeps its offset; the configured initial
            // value was never published: offset 0 stands for "before the first value".
            let restored = log.lastValue.map { HistoryEntry(offset: log.lastOffset, value: $0) }
            current = CurrentValueSubject(restored ?? HistoryEntry(offset: 0, value: initialValue))
            passthrough = nil
        } else {
            passthrough = PassthroughSubject()
            current = nil
        }
        log.onCommit = { [weak self] entry in self?.committed(entry) }
        let (passthrough, current) = (self.passthrough, self.current)
        liveDemand = LiveDemand { passthrough?.subscriberCount ?? current!.subscriberCount }
        log.attach(liveDemand)
    }

    /// The history's epoch.
    public var epoch: String { log.epoch }

    /// The current value of a current-value subject, with its offset.
    public var currentEntry: HistoryEntry? { current?.value }

    /// The latest value with its offset: a current-value subject's current value, else
    /// the last value committed (kept even when retention dropped it from the readable
    /// history); `nil` when no value was ever committed in this epoch.
    public var latestEntry: HistoryEntry? {
        if let current { return current.value }
        return log.lastValue.map { HistoryEntry(offset: log.lastOffset, value: $0) }
    }

    /// Whether the subject has finished (or will, once its stored values are delivered).
    public var isCompleted: Bool { pendingCompletion != nil || (passthrough?.isCompleted ?? current!.isCompleted) }

    /// The number of subscribers: live ones, and those still replaying its history.
    public var subscriberCount: Int { (passthrough?.subscriberCount ?? current!.subscriberCount) + replaying }

    /// Subscriptions replaying the history that have not attached to the live values yet.
    var replaying = 0

    /// The subject's values with their offsets: a current-value subject's current value
    /// first, then each value as it is committed.
    public var entries: AnyPublisher<HistoryEntry, HubError> {
        if let passthrough { return passthrough.eraseToAnyPublisher() }
        return current!.eraseToAnyPublisher()
    }

    /// The values committed from now on (no current value first): what a replay that
    /// caught up continues with.
    public var liveEntries: AnyPublisher<HistoryEntry, HubError> {
        if let passthrough { return passthrough.eraseToAnyPublisher() }
        return current!.dropFirst().eraseToAnyPublisher()
    }

    /// Stores `value`; `completion` gets its offset (or the store's error) before the
    /// value reaches the subscribers.
    func append(_ value: Value, completion: ((Result<UInt64, HubError>) -> Void)?) {
        unsettled += 1
        log.append(value) { [weak self] result in
            if case let .success(offset) = result { self?.acknowledged.insert(offset) }
            completion?(result)
            // A committed value stays unsettled until it is delivered (``committed(_:)``).
            if case .failure = result { self?.settle() }
        }
    }

    /// Finishes the subject once every value still being stored has been delivered.
    func finish(_ completion: Subscribers.Completion<HubError>) {
        guard pendingCompletion == nil else { return }
        pendingCompletion = completion
        if unsettled == 0 { deliverCompletion() }
    }

    /// Hears each committed value before the subscribers get it (a table subject's table).
    var beforeDelivery: ((HistoryEntry) -> Void)?

    private func committed(_ entry: HistoryEntry) {
        lastOffset = entry.offset
        beforeDelivery?(entry)
        if let passthrough { passthrough.send(entry) } else { current!.send(entry) }
        if acknowledged.remove(entry.offset) != nil { settle() }
    }

    private func settle() {
        if unsettled > 0 { unsettled -= 1 }
        if unsettled == 0, pendingCompletion != nil { deliverCompletion() }
    }

    private func deliverCompletion() {
        guard let completion = pendingCompletion else { return }
        if let passthrough { passthrough.send(completion: completion) } else { current!.send(completion: completion) }
    }
}
