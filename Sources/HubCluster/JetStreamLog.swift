import DequeModule
import HubLoop
import HubRegistry
import HubValue
import HubWire

/// One subject's history in a ``JetStreamStore``: its stream, seen from the hub's loop.
///
/// Appends are stored publishes made in order on the store's worker; each ack comes back
/// to the loop with the values other nodes stored before it (read from the stream when
/// the ack's sequence is not the next one), so that ``onCommit`` reports every value of
/// the stream once, in sequence order, and the completion of an append runs before
/// its commit is reported.
///
/// A table subject's log (``HistoryRetention/keepsLatestPerKey``) publishes each change
/// to its key's subject (``ClusterSubjectNames/tableKey(_:key:)``) in a stream that keeps
/// the last message of each key: the changelog compacted per key, as NATS KV keeps its
/// values. Its offsets have gaps where a key changed again, which a table's replay
/// accepts (``compactsPerKey``). It follows its stream from the start, whatever the
/// subscribers here want, so that the table of every node has every change.
final class JetStreamLog: SubjectLog {
    let epoch: String
    private(set) var lastOffset: UInt64
    private(set) var lastValue: Value?
    var onCommit: ((HistoryEntry) -> Void)?
    var retention: HistoryRetention
    /// The latest change of each live key of a table subject (kept as committed).
    private var rows: [String: HistoryEntry]
    var latestPerKey: [HistoryEntry] { Array(rows.values) }
    /// A table's stream keeps each key's last change only.
    var compactsPerKey: Bool { keySubject != nil }

    private unowned let store: JetStreamStore
    /// A table's subject of a key (nil for other subjects: every value goes to ``subject``).
    private let keySubject: ((String) -> String)?
    private let stream: String
    private let subject: String
    private var lastTime: Int64
    private var completions = Deque<(Result<UInt64, HubError>) -> Void>()
    private var nextCatchUp: UInt64 = 0
    /// The last sequence the worker knows of (used on the worker only).
    let cursor: Cursor
    /// The consumer bringing the values other nodes store, while following.
    private var follower: JetStreamFollower?
    /// Values other nodes stored, waiting for this node's appends before them to be acked.
    private var held = Deque<HistoryEntry>()
    private var followers = 0
    /// Catch-ups waiting for ``lastOffset`` to reach their sequence.
    private var catchingUp: [(id: UInt64, target: UInt64, completion: () -> Void)] = []
    /// What the subject's live subscribers here can take (owned by the subject).
    private weak var demand: LiveDemand?
    /// Whether the follower holds a permit whose batch has not come yet.
    private var permitted = false

    init(
        store: JetStreamStore, stream: String, subject: String, retention: HistoryRetention, opened: JetStreamStreams.Opened,
        keySubject: ((String) -> String)? = nil
    ) {
        self.store = store
        self.keySubject = keySubject
        rows = opened.rows
        self.stream = stream
        self.subject = subject
        self.retention = retention
        epoch = opened.epoch
        lastOffset = opened.lastSequence
        lastValue = opened.lastValue
        lastTime = opened.lastTime
        cursor = Cursor(seen: opened.lastSequence)
    }

    func append(_ value: Value, completion: @escaping (Result<UInt64, HubError>) -> Void) {
        guard !store.closed else {
            completion(.failure(HubError(.internal, "the JetStream store is closed")))
            return
        }
        guard store.pendingAppends < store.maxPendingAppends else {
            completion(.failure(HubError(.limitExceeded, "\(store.maxPendingAppends) values already wait for JetStream's ack")))
            return
        }
        var target = subject
        if let keySubject {
            guard let key = TableChange.key(of: value) else {
                completion(.failure(HubError(.badMessage, "a table takes only {\"key\": K, \"value\": V} changes")))
                return
            }
            target = keySubject(key)
        }
        store.pendingAppends += 1
        lastTime = max(store.clock(), lastTime)
        var json: [UInt8] = []
        value.writeJSON(into: &json)
        completions.append(completion)
        let append = JetStreamAppends.Append(
            log: self, stream: stream, subject: target, filter: subject, payload: json, time: lastTime, size: retention.size,
            cursor: cursor, value: value)
        // Inside a pipeline's commit, the append goes with its checkpoint.
        if store.transaction != nil {
            store.transaction!.append(append)
        } else {
            store.appends.add(append)
        }
    }

    func acked(_ outcome: Result<(UInt64, [HistoryEntry]), NATSError>, value: Value) {
        store.pendingAppends -= 1
        guard let completion = completions.popFirst() else { return }
        switch outcome {
        case let .failure(error):
            completion(.failure(JetStreamStore.hubError(error)))
        case let .success((sequence, others)):
            for entry in others where entry.offset > lastOffset { commit(entry) }
            if sequence > lastOffset {
                lastOffset = sequence
                lastValue = value
                keep(HistoryEntry(offset: sequence, value: value))
            }
            completion(.success(sequence))
            onCommit?(HistoryEntry(offset: sequence, value: value))
        }
        drainHeld()
    }

    /// Whether the log follows the stream for the values other nodes store (see
    /// ``JetStreamFollower``): a node does while it has subscribers of the subject.
    var isFollowing: Bool { follower != nil }

    /// Starts following the stream from the value after ``lastOffset``.
    func follow() throws(HubError) {
        guard follower == nil, !store.closed else { return }
        followers += 1
        let consumer = "hub_f_\(store.streams.writer)_\(followers)"
        let follower: JetStreamFollower
        do throws(NATSError) {
            follower = try JetStreamFollower(
                context: store.streams.context, reaper: store.streams.reaper, stream: stream, subject: subject,
                consumer: consumer, start: lastOffset + 1)
        } catch {
            throw JetStreamStore.hubError(error)
        }
        self.follower = follower
        let executor = store.executor
        let log = LoopBound(self, eventLoop: executor)
        let bound = LoopBound(follower, eventLoop: executor)
        follower.run { batch in
            executor.execute { log.value.observed(batch, from: bound.value) }
        }
        permitFetch()
    }

    func attach(_ demand: LiveDemand) {
        self.demand = demand
        demand.onRise = { [weak self] in self?.permitFetch() }
    }

    /// Lets the follower fetch its next batch when none is in flight or held, within
    /// what the subscribers here want (a whole window while a replay catches up: it
    /// must reach the stream's end whatever the live demand).
    private func permitFetch() {
        guard let follower, !permitted, held.isEmpty else { return }
        // A table takes every change, so that its rows are current on every node.
        let wanted = catchingUp.isEmpty && keySubject == nil ? (demand?.wanted ?? .max) : .max
        guard wanted > 0 else { return }
        permitted = true
        follower.permit(min(JetStreamFollower.window, wanted))
    }

    /// Stops following (values the follower still brings are dropped).
    func unfollow() {
        follower?.stop()
        follower = nil
        permitted = false
        held.removeAll()
        // Nothing brings the values they wait for any more.
        let waiting = catchingUp
        catchingUp.removeAll()
        for entry in waiting { entry.completion() }
    }

    private func observed(_ batch: [(entry: HistoryEntry, writer: String?)], from source: JetStreamFollower) {
        guard source === follower else { return }
        permitted = false
        for (entry, writer) in batch where entry.offset > lastOffset {
            // This store's own values are committed by their acks.
            if writer == store.streams.writer, !completions.isEmpty { continue }
            held.append(entry)
        }
        drainHeld()
    }

    /// Commits the held values that come next, or that no append of this node precedes;
    /// lets the follower fetch again once none is held (one window in memory at most),
    /// within the subscribers' demand.
    private func drainHeld() {
        while let first = held.first {
            if first.offset <= lastOffset {
                held.removeFirst()
            } else if first.offset == lastOffset + 1 || completions.isEmpty {
                commit(held.removeFirst())
            } else {
                break
            }
        }
        if held.isEmpty { permitFetch() }
    }

    private func commit(_ entry: HistoryEntry) {
        lastOffset = entry.offset
        lastValue = entry.value
        keep(entry)
        onCommit?(entry)
        caughtUp()
    }

    /// A table's change, as its key's row (or its key's row removed, for `null`).
    private func keep(_ entry: HistoryEntry) {
        guard keySubject != nil, let key = TableChange.key(of: entry.value) else { return }
        rows[key] = entry.value["value"]?.isNull == false ? entry : nil
    }

    /// Asks the stream for its last sequence, then follows it (if not yet) until this log
    /// has reported every value up to there; a failed request completes at once.
    func catchUp(_ completion: @escaping () -> Void) {
        guard !store.closed else { return completion() }
        let id = nextCatchUp
        nextCatchUp += 1
        catchingUp.append((id, UInt64.max, completion))
        streamLastSequence { [self] last in caughtUp(id: id, last: last) }
    }

    /// The stream's last sequence once this node's appends made so far are stored
    /// (`nil` when the request failed), on the loop.
    func streamLastSequence(_ completion: @escaping (UInt64?) -> Void) {
        let (streams, stream) = (store.streams, self.stream)
        store.request({ try? streams.lastSequence(stream: stream) }, then: completion)
    }

    /// Calls `completion` once every value through `sequence` has been reported (following
    /// the stream until then when it does not yet).
    func catchUp(through sequence: UInt64, _ completion: @escaping () -> Void) {
        guard !store.closed, sequence > lastOffset else { return completion() }
        let id = nextCatchUp
        nextCatchUp += 1
        catchingUp.append((id, UInt64.max, completion))
        caughtUp(id: id, last: sequence)
    }

    private func caughtUp(id: UInt64, last: UInt64?) {
        guard let index = catchingUp.firstIndex(where: { $0.id == id }) else { return }
        catchingUp[index].target = last ?? 0
        if let last, last > lastOffset {
            if follower == nil {
                do throws(HubError) { try follow() } catch {
                    // Nothing can bring the values: what waits for them goes on without them.
                    store.logger.warning(
                        "could not follow a stream to catch up with it: what waited for its values goes on without them",
                        metadata: ["stream": "\(stream)", "through": "\(last)", "error": "\(error)"])
                    catchingUp[index].target = 0
                }
            } else {
                permitFetch()
            }
        }
        caughtUp()
    }

    /// Completes the catch-ups whose sequence is reached (in order of their calls).
    private func caughtUp() {
        while let first = catchingUp.first, first.target <= lastOffset {
            catchingUp.removeFirst()
            first.completion()
        }
    }

    func read(
        after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void
    ) {
        guard !store.closed else {
            completion(.failure(HubError(.internal, "the JetStream store is closed")))
            return
        }
        // A table's changes do not expire (the stream keeps each key's last one).
        let cutoff = compactsPerKey ? nil : retention.ttl.map { store.clock() - JetStreamStreams.nanoseconds($0) }
        let streams = store.streams
        let (stream, subject, limit) = (self.stream, self.subject, max(1, limit))
        store.request({
            Result { () throws(NATSError) in
                try streams.read(
                    stream: stream, subject: subject, after: after, through: through,
                    limit: limit, maxBytes: maxBytes, cutoff: cutoff)
            }
        }, then: { result in completion(result.mapError(JetStreamStore.hubError)) })
    }

    /// The worker's knowledge of the stream's last sequence.
    final class Cursor: @unchecked Sendable {
        var seen: UInt64
        init(seen: UInt64) { self.seen = seen }
    }
}
