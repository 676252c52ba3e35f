import HeapModule
import HubEngine
import HubValue
import HubWire
import HubPipeline
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The publishers subscriptions receive: a name's, a pipeline's, a subject's history.
extension Hub {
    /// The publisher a subscription `to: name` receives, buffered per the
    /// subscription's settings (or the subject's), and what kind of entry it is.
    ///
    /// With a `memory` budget, the subscription's buffer is also bounded by the bytes
    /// that budget allows (the subscriber's connection's).
    public func publisher(
        for name: String, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil, memory: ResourceBudget? = nil
    ) throws(HubError) -> (entry: Entry, publisher: AnyPublisher<Value, HubError>) {
        let entry = try resolve(name)
        let size = try bufferCapacity(bufferSize ?? defaultBufferSize(of: entry))
        return (entry, try bufferedPublisher(entry, bufferSize: size, overflow: overflow, memory: memory))
    }

    /// Compiles `source` for one subscription whose hot sources get `bufferSize` and `overflow`.
    /// A source longer than ``PipelineLimits/maxSourceLength`` is `limit_exceeded`
    /// (PROTOCOL.md §6: pipeline size is a server limit, not a compile error).
    ///
    /// `budget` is what the pipeline spends (steps, memory, timers: its connection's);
    /// `permissions`, those of the client's identity: every name the text reads must be
    /// allowed for `subscribe` and `pipelines` (checked before anything runs, and again
    /// when a name computed at run time is opened), else `forbidden`. The compiled
    /// pipeline is counted in `budget`'s memory while it lives.
    public func compile(
        pipeline source: String, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        budget: ResourceBudget? = nil, permissions: Permissions? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        try compile(pipeline: source, bufferSize: bufferSize, overflow: overflow, budget: budget, permissions: permissions, named: nil)
    }

    /// Compiles `source`, the text of `named` when it is a named pipeline's (whose failure
    /// policy and logs its environment follows); `outer` is `.` in its top-level arguments
    /// and `depth` how deeply named pipelines were called to get here (`page(.next)`).
    func compile(
        pipeline source: String, bufferSize: Int?, overflow: OverflowPolicy?, budget: ResourceBudget?,
        permissions: Permissions?, named: NamedPipeline?, outer: Value = .null, depth: Int = 0, runner: PipelineRunner? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let length = source.utf8.count
        guard length <= limits.maxSourceLength else {
            throw HubError(
                .limitExceeded,
                "pipeline text is \(length) bytes, more than the limit of \(limits.maxSourceLength)",
                data: ["limit": .int(Int64(limits.maxSourceLength))])
        }
        let size = try bufferCapacity(bufferSize ?? configuration.defaultBufferSize)
        // The subscription's buffer settings travel with the environment the pipeline is
        // compiled against (and that its nested pipelines compile against later).
        let environment = SubscriptionEnvironment(
            hub: self, bufferSize: size, overflow: overflow, budget: budget, permissions: permissions, pipeline: named,
            depth: depth, runner: runner)
        guard let budget else { return try PipelineCompiler.compile(source, environment: environment, outer: outer) }
        // The compiled text (its syntax, constants and closures) is held while the pipeline lives.
        let lease = try budget.lease(bytes: length * PipelineCompiler.compiledBytesPerSourceByte, for: "pipeline")
        let compiled = try PipelineCompiler.compile(source, environment: environment, outer: outer)
        return compiled
            .handleEvents(receiveCompletion: { _ in lease.release() }, receiveCancel: { lease.release() })
            .eraseToAnyPublisher()
    }

    /// A subscription to a subject with history (PROTOCOL.md §10): its values with their
    /// offsets from `since` (see ``Publishers/HistoryReplay``), hot-buffered live with
    /// `bufferSize` and `overflow` (or the subject's) and bounded by `memory`, reads paced
    /// by `pacer`; `onStart` hears the epoch, latest offset and, with `since`, whether it
    /// was recovered.
    ///
    /// A table subject gives its snapshot first, then its changes (``Publishers/TableReplay``;
    /// `lenient` does not apply: a `since` whose changes are gone gives the snapshot again).
    public func historyPublisher(
        for subject: HubSubject, since: HistorySince?, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
        memory: ResourceBudget? = nil, pacer: (any ReplayPacer)? = nil, lenient: Bool = false,
        onStart: @escaping (HistoryPosition, Bool?) -> Void
    ) throws(HubError) -> AnyPublisher<HistoryEntry, HubError> {
        guard let history = subject.history else {
            throw HubError(.internal, "subject '\(subject.name)' keeps no history")
        }
        // In a cluster the node follows the subject's stream from now on (the cluster
        // reviews its interest again at its catalog interval, once the replay has ended).
        if let clusterLink, !HubName.isSystem(subject.name) { clusterLink.hub(self, interestMayHaveChangedIn: subject.name) }
        let capacity = try bufferCapacity(bufferSize ?? subject.bufferSize)
        let (metrics, policy) = (self.metrics, subject.overflowPolicy(asked: overflow))
        let replay = { (since: HistorySince?, lenient: Bool, onStart: @escaping (HistoryPosition, Bool?) -> Void) in
            Publishers.HistoryReplay(
                history: history, since: since, capacity: capacity, policy: policy, metrics: metrics,
                counters: subject.counters, memory: memory, pacer: pacer, congestion: subject.congestion,
                lenient: lenient, onStart: onStart)
        }
        guard let table = subject.table else { return replay(since, lenient, onStart).eraseToAnyPublisher() }
        return Publishers.TableReplay(
            table: table, history: history, since: since, memory: memory,
            // A changelog compacted per key has gaps the table's replay goes over.
            changes: { since, onStart in replay(since, history.log.compactsPerKey, onStart) },
            onStart: onStart
        ).eraseToAnyPublisher()
    }

    /// The current value of `key` in the table subject `name`, with the offset of the change
    /// that set it, or `nil` when the table has no such key: `not_found` for a name that is
    /// not a table subject.
    public func lookup(_ key: Value, inTable name: String) throws(HubError) -> HistoryEntry? {
        guard case .subject(let subject)? = entries[name], let table = subject.table else {
            if let entry = entries[name] {
                throw HubError(.notFound, "'\(name)' is a \(entry.kindName), not a table subject")
            }
            throw HubError(.notFound, "no table subject named '\(name)'")
        }
        subject.wasUsed = true
        switch TableChange.parse(["key": key, "value": .null]) {
        case let .success(change): return table.lookup(change.key)
        case let .failure(refusal):
            throw HubError(.badMessage, "table '\(name)': \(refusal.message)")
        }
    }

    /// The buffer size a subscription to `entry` gets when it asks for none.
    func defaultBufferSize(of entry: Entry) -> Int {
        switch entry {
        case .subject(let subject): return subject.bufferSize
        case .trigger: return configuration.defaultBufferSize
        case .pipeline(let pipeline): return pipeline.bufferSize ?? configuration.defaultBufferSize
        }
    }

    /// `entry`'s publisher for one subscription, hot-buffered with `bufferSize` and
    /// `overflow`, or with the entry's own settings (then the hub's) where they are `nil`.
    /// A pipeline's hot sources pass the hub's `origin`, so that the sender of a buffered value
    /// is known again when it is delivered.
    func bufferedPublisher(
        _ entry: Entry, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget?, origin: ValueOrigin? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let size = bufferSize ?? defaultBufferSize(of: entry)
        switch entry {
        case .subject(let subject) where subject.table != nil:
            // A table read by a pipeline (`lookup(positions, …)`): its snapshot, then its changes.
            return try historyPublisher(
                for: subject, since: nil, bufferSize: size, overflow: overflow, memory: memory, onStart: { _, _ in }
            ).map(\.value).eraseToAnyPublisher()
        case .subject(let subject):
            return watchingInterest(in: subject.name, subject.publisher)
                .hotBuffer(
                    capacity: size, policy: subject.overflowPolicy(asked: overflow), metrics: metrics, counters: subject.counters,
                    memory: memory, origin: origin, congestion: subject.congestion)
                .eraseToAnyPublisher()
        case .trigger(let trigger):
            return triggerPublisher(trigger, key: nil, bufferSize: size, overflow: overflow, memory: memory, origin: origin)
        case .pipeline(let pipeline):
            return try pipeline.publisher(
                in: self, bufferSize: size, overflow: overflow ?? pipeline.overflow ?? configuration.defaultOverflow,
                memory: memory)
        }
    }

    func triggerPublisher(
        _ trigger: HubTrigger, key: Value?, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget?,
        origin: ValueOrigin? = nil
    ) -> AnyPublisher<Value, HubError> {
        watchingInterest(in: trigger.name, trigger.publisher(key: key))
            .hotBuffer(
                capacity: bufferSize ?? configuration.defaultBufferSize,
                policy: overflow ?? configuration.defaultOverflow, metrics: metrics, counters: trigger.counters,
                memory: memory, origin: origin)
            .eraseToAnyPublisher()
    }

    func bufferCapacity(_ size: Int) throws(HubError) -> Int {
        guard size >= 1, size <= configuration.maxBufferSize else {
            throw HubError(.badMessage, "buffer must be between 1 and \(configuration.maxBufferSize), got \(size)")
        }
        return size
    }
}
