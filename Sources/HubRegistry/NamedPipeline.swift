import HubEngine
import HubPipeline
import HubValue
import HubWire
import Logging

/// A pipeline declared under a name (from configuration): subscribing `to` its
/// name, or using the name as a source in another pipeline, attaches to it.
///
/// **Shared** (the default): the subscribers share one *connection*, one
/// compiled instance of the pipeline subscribed once upstream and fanned out
/// through a ``PassthroughSubject`` (a ``Publishers/Multicast`` autoconnected,
/// as Combine's `share()`), which asks the pipeline for `.unlimited`. Each
/// subscriber has its own demand and its own buffer (a
/// ``Publishers/HotBuffer`` after the fan-out), so a slow subscriber overflows
/// alone. The first subscriber opens the connection (the pipeline is compiled
/// and subscribed); the last one to cancel closes it (the pipeline is
/// cancelled upstream). A *late* subscriber, one that arrives while the
/// connection is open, sees only the values the pipeline emits from then on:
/// nothing is replayed, and the pipeline's state (a `scan`'s accumulator, the
/// latest values of a `combineLatest`, a current-value subject's value, which
/// was emitted when the connection opened) is what the connection has built so
/// far. Once the pipeline has completed or failed, or after its last subscriber
/// has left, the next subscriber opens a new connection: the pipeline compiled
/// anew, its state from scratch.
///
/// **Current value** (`currentValue: true`, shared pipelines only): the
/// connection keeps the latest value the pipeline emitted, and a subscriber
/// that joins an open connection receives that value first (into its own
/// buffer, before anything the pipeline emits later), as a subscriber of a
/// ``CurrentValueSubject`` does. The first subscriber, which opens the
/// connection, receives what the pipeline emits on connecting (for
/// `input | scan(s, e) | prepend(s)`, the initial state). When the connection
/// closes (its last subscriber left, or the pipeline ended) the value is
/// forgotten with the rest of the connection's state.
///
/// **Per-subscriber** (`shared: false`): each subscriber gets its own
/// compilation of the pipeline, with demand end to end exactly as for ad-hoc
/// pipeline text.
///
/// Confined to the hub's event loop, like the hub.
public final class NamedPipeline {
    /// The pipeline's name.
    public let name: String
    /// Its counters for the metrics (the hub's bounded table hands them out).
    public internal(set) var counters: NameCounters
    /// The pipeline's source text.
    public let source: String
    /// Whether the subscribers share one upstream subscription.
    public let isShared: Bool
    /// The buffer size its subscribers get unless they ask for another (`nil`: the hub's default).
    public let bufferSize: Int?
    /// The overflow policy its subscribers get unless they ask for another (`nil`: the hub's default).
    public let overflow: OverflowPolicy?
    /// Whether a subscriber joining an open connection first receives the latest value (shared pipelines only).
    public let keepsCurrentValue: Bool
    /// The number of live subscribers (those that have neither cancelled nor been completed),
    /// the broker's own subscription of a running pipeline included.
    public private(set) var subscriberCount = 0
    /// What a value that makes the pipeline fail does.
    public let failurePolicy: PipelineFailurePolicy
    /// Whether the broker keeps the pipeline running from its start, without subscribers
    /// (``start(in:)``): for pipelines that write into subjects with `into`.
    public let runs: Bool
    /// Where a position of the pipeline's text is in its configuration file
    /// (`"hub.yml:12:7"`), for errors and logs; `nil` when it has no file.
    public let locate: (@Sendable (_ line: Int, _ column: Int) -> String?)?
    /// How a running pipeline checkpoints its state (``CheckpointPolicy``); `nil`: never
    /// (its state starts afresh, and its sources are read live, at every start).
    public let checkpoint: CheckpointPolicy?

    /// The first wait before a ``PipelineFailurePolicy/restart``.
    public static let restartBackoff: Duration = .seconds(1)
    /// The longest wait before a restart.
    public static let maximumRestartBackoff: Duration = .seconds(60)

    /// The broker's own subscription of a running pipeline.
    private var runner: AnyCancellable?
    /// The runner of a running pipeline that checkpoints.
    private var checkpointed: PipelineRunner?

    /// The open connection of a shared pipeline.
    private var connection: Connection?
    /// Set while the pipeline is being compiled, to refuse a pipeline that refers to itself.
    private var compiling = false

    /// A named pipeline; ``Hub/declarePipeline(_:source:shared:bufferSize:overflow:currentValue:)`` makes and registers one.
    /// `currentValue` is only honoured for a shared pipeline.
    public init(name: String, source: String, shared: Bool = true, bufferSize: Int? = nil, overflow: OverflowPolicy? = nil,
                currentValue: Bool = false, onError: PipelineFailurePolicy = .fail, runs: Bool = false,
                checkpoint: CheckpointPolicy? = nil,
                locate: (@Sendable (_ line: Int, _ column: Int) -> String?)? = nil) {
        self.checkpoint = runs ? checkpoint : nil
        self.name = name
        counters = NameCounters(name: name)
        self.source = source
        isShared = shared
        keepsCurrentValue = shared && currentValue
        self.bufferSize = bufferSize
        self.overflow = overflow
        failurePolicy = onError
        self.runs = runs
        self.locate = locate
    }

    /// Whether the broker's own subscription of a running pipeline is live.
    public var isRunning: Bool { runner != nil || checkpointed != nil }

    /// Whether the running pipeline checkpoints its state (it runs, and its policy finds a store).
    public var isCheckpointed: Bool { checkpointed != nil }

    /// The store a running pipeline checkpoints into in `hub`, if it checkpoints: the durable
    /// store, or (for a policy that does not need one) the memory store.
    func checkpointStore(in hub: Hub) -> (any SubjectStore)? {
        guard let checkpoint else { return nil }
        if let durable = hub.durableStore { return durable }
        return checkpoint.onlyWithDurableStore ? nil : hub.historyStore
    }

    /// Runs the pipeline without subscribers: subscribes to it with unlimited demand and
    /// ignores its values (what it does is write them with `into`). Logs its end. A
    /// pipeline that checkpoints (``checkpoint``) resumes from its last checkpoint
    /// instead (see ``PipelineRunner``).
    public func start(in hub: Hub) throws(HubError) {
        guard runner == nil, checkpointed == nil else { return }
        if let policy = checkpoint, let store = checkpointStore(in: hub) {
            // Compiled once now, so that a text that does not compile is refused at once.
            _ = try compile(in: hub, bufferSize: nil, overflow: nil)
            let started = PipelineRunner(pipeline: self, hub: hub, store: store, policy: policy)
            checkpointed = started
            subscriberCount += 1
            started.start()
            return
        }
        let publisher = try self.publisher(in: hub, bufferSize: 1, overflow: .error)
        let logger = hub.logger
        let name = self.name
        var ended = false
        let cancellable = publisher.sink(
            receiveCompletion: { [weak self] completion in
                ended = true
                self?.runner = nil
                switch completion {
                case .finished:
                    logger.notice("running pipeline finished", metadata: ["pipeline": "\(name)"])
                case .failure(let error):
                    logger.error("running pipeline stopped", metadata: ["pipeline": "\(name)", "error": "\(error.message)"])
                }
            },
            receiveValue: { _ in })
        if !ended { runner = cancellable }
        logger.info("running pipeline started", metadata: ["pipeline": "\(name)"])
    }

    /// Stops a running pipeline (the broker is stopping, or the pipeline was removed): one
    /// that checkpoints commits its state and the values it wrote first.
    public func stop() {
        runner.take()?.cancel()
        checkpointed?.stop(commit: true)
    }

    /// Stops a running pipeline that another node of the cluster runs now: one that
    /// checkpoints drops what it has not committed (the other node resumes from its last
    /// checkpoint; committing now would overwrite what that node commits).
    public func release() {
        runner.take()?.cancel()
        checkpointed?.stop(commit: false)
    }

    /// The runner has stopped (or its pipeline ended).
    func runnerEnded() {
        guard checkpointed.take() != nil else { return }
        subscriberCount -= 1
    }

    /// The pipeline compiled for its runner: its sources with history, its `into` and its
    /// operators' states go through `runner`; failures are placed and logged, not retried
    /// (the runner restarts it from its last checkpoint).
    ///
    /// A shared pipeline's subscribers share the runner's instance, as they share a running
    /// pipeline's that does not checkpoint: it becomes the open connection (the values they
    /// get are the pipeline's as it emits them; only what it writes `into` subjects waits
    /// for its checkpoints).
    func compileForRunner(_ runner: PipelineRunner, in hub: Hub) throws(HubError) -> AnyPublisher<Value, HubError> {
        let compiled = try hub.compile(
            pipeline: source, bufferSize: bufferSize, overflow: overflow, budget: nil, permissions: nil, named: self,
            runner: runner)
        let instrumented = instrumented(compiled, in: hub, restarts: false)
        guard isShared else { return instrumented }
        let opened = Connection(upstream: instrumented, keepsLatest: keepsCurrentValue)
        connection = opened
        return opened.shared.eraseToAnyPublisher()
    }

    /// Whether a shared pipeline has an open connection (compiled and shared upstream).
    public var isConnected: Bool {
        guard let connection else { return false }
        return !connection.subject.isCompleted
    }

    /// The latest value of the open connection of a ``keepsCurrentValue`` pipeline (nil otherwise, or before its first value).
    public var currentValue: Value? {
        guard keepsCurrentValue, let connection, !connection.subject.isCompleted else { return nil }
        return connection.latest
    }

    /// The publisher one subscriber of the pipeline receives, with a buffer of
    /// `bufferSize` values and `overflow` (after the fan-out for a shared
    /// pipeline; in front of the hot sources for a per-subscriber one).
    /// `memory`: the budget the subscriber's buffer (after a shared pipeline's fan-out)
    /// holds its values in, if any.
    public func publisher(
        in hub: Hub, bufferSize: Int, overflow: OverflowPolicy, memory: ResourceBudget? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        if isShared {
            let connection = try openConnection(in: hub)
            guard keepsCurrentValue else {
                return Counted(upstream: connection.shared.hotBuffer(
                                   capacity: bufferSize, policy: overflow, metrics: hub.metrics, counters: counters, memory: memory),
                               pipeline: self)
                    .eraseToAnyPublisher()
            }
            // The latest value is read when the subscriber subscribes; the
            // buffer asks for everything at once, so it goes in first and the
            // subscription to the fan-out follows with nothing in between.
            let replaying = Deferred { () -> Publishers.Concatenate<Publishers.Sequence<[Value], HubError>, SharedOutput> in
                Publishers.Concatenate(prefix: Publishers.Sequence(sequence: connection.latest.map { [$0] } ?? []),
                                       suffix: connection.shared)
            }
            return Counted(upstream: replaying.hotBuffer(
                               capacity: bufferSize, policy: overflow, metrics: hub.metrics, counters: counters, memory: memory),
                           pipeline: self)
                .eraseToAnyPublisher()
        }
        let compiled = try compile(in: hub, bufferSize: bufferSize, overflow: overflow)
        return Counted(upstream: compiled, pipeline: self).eraseToAnyPublisher()
    }

    /// A new instance of the pipeline with `.` bound to `argument` (a call `name(argument)` in
    /// another pipeline, or in itself): compiled for the caller's subscription, never shared;
    /// its failures, placed in the file, go to the caller.
    func instance(
        in hub: Hub, argument: Value, bufferSize: Int, overflow: OverflowPolicy?, budget: ResourceBudget?,
        permissions: Permissions?, depth: Int
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let compiled = try hub.compile(
            pipeline: source, bufferSize: self.bufferSize ?? bufferSize, overflow: overflow ?? self.overflow,
            budget: budget, permissions: permissions, named: self, outer: argument, depth: depth)
        return compiled.mapError { [weak self] error in self?.placed(error) ?? error }.eraseToAnyPublisher()
    }

    /// Compiles the pipeline once against `hub` without subscribing to it: a
    /// check that every name it uses resolves (configuration validation).
    public func check(in hub: Hub) throws(HubError) {
        _ = try compile(in: hub, bufferSize: nil, overflow: nil)
    }

    // MARK: Private

    private func openConnection(in hub: Hub) throws(HubError) -> Connection {
        if let connection, !connection.subject.isCompleted { return connection }
        let compiled = try compile(in: hub, bufferSize: bufferSize, overflow: overflow)
        let opened = Connection(upstream: compiled, keepsLatest: keepsCurrentValue)
        connection = opened
        return opened
    }

    private func compile(in hub: Hub, bufferSize: Int?, overflow: OverflowPolicy?) throws(HubError) -> AnyPublisher<Value, HubError> {
        guard !compiling else {
            throw NamedPipeline.cycle([name])
        }
        compiling = true
        defer { compiling = false }
        do {
            // The configuration's own pipelines: no client budget or permissions apply.
            let compiled = try hub.compile(
                pipeline: source, bufferSize: bufferSize ?? self.bufferSize, overflow: overflow ?? self.overflow,
                budget: nil, permissions: nil, named: self)
            return instrumented(compiled, in: hub, restarts: failurePolicy == .restart)
        } catch where error.code == .pipelineError {
            // A cycle found further in: name this pipeline in it until it closes.
            guard case .array(let chain)? = error.data?["cycle"], chain.count == 1 || chain.first != chain.last else { throw error }
            throw NamedPipeline.cycle([name] + chain.compactMap(\.stringValue))
        }
    }

    /// The compiled pipeline with its failures placed in the file, logged, and (for
    /// ``PipelineFailurePolicy/restart``) followed by a new start after a back-off.
    private func instrumented(_ compiled: AnyPublisher<Value, HubError>, in hub: Hub, restarts: Bool) -> AnyPublisher<Value, HubError> {
        let placed = compiled
            .mapError { [weak self] error in self?.placed(error) ?? error }
            .handleEvents(receiveCompletion: { [weak self, weak hub] completion in
                guard let self, let hub, case .failure(let error) = completion else { return }
                hub.metrics.namedPipelineFailures += 1
                var metadata: Logger.Metadata = [
                    "pipeline": "\(self.name)", "sender": "\(hub.origin.sender ?? "unknown")", "error": "\(error.message)",
                ]
                if let code = error.data?["code"] { metadata["code"] = "\(code.jsonString())" }
                if restarts {
                    hub.logger.warning("pipeline failed; restarting it after a back-off", metadata: metadata)
                } else {
                    hub.logger.error("pipeline failed", metadata: metadata)
                }
                hub.onNamedPipelineFailure?(self.name, hub.origin.sender, error)
            })
        guard restarts else { return placed.eraseToAnyPublisher() }
        return Self.restarting(placed.eraseToAnyPublisher(), on: hub.scheduler)
    }

    private static func restarting<S: Scheduler>(_ publisher: AnyPublisher<Value, HubError>, on scheduler: S) -> AnyPublisher<Value, HubError> {
        publisher.retry(backoff: restartBackoff, maximum: maximumRestartBackoff, scheduler: scheduler).eraseToAnyPublisher()
    }

    /// `error` with the position of its failing expression in the configuration file: the
    /// message starts with it and `data.at` holds it (`"hub.yml:37:11"`).
    func placed(_ error: HubError) -> HubError {
        guard let locate, case .object(var data)? = error.data, data["at"] == nil,
              let line = data["line"]?.intValue, let column = data["column"]?.intValue,
              let at = locate(Int(line), Int(column)) else { return error }
        data["at"] = .string(at)
        return HubError(error.code, "\(at): \(error.message)", data: .object(data))
    }

    /// A value skipped under ``PipelineFailurePolicy/skip``: logged with its sender.
    func skipped(_ error: HubError, in hub: Hub) {
        hub.logger.warning("pipeline skipped a value", metadata: [
            "pipeline": "\(name)", "sender": "\(hub.origin.sender ?? "unknown")", "error": "\(placed(error).message)",
        ])
    }

    /// A `handleEvents` tap that failed and was ignored: logged.
    func tapFailed(_ error: HubError, in hub: Hub) {
        hub.logger.warning("pipeline tap failed (ignored)", metadata: [
            "pipeline": "\(name)", "sender": "\(hub.origin.sender ?? "unknown")", "error": "\(placed(error).message)",
        ])
    }

    /// The `pipeline_error` of pipelines that use each other as sources in a cycle, `chain` from the outermost.
    private static func cycle(_ chain: [String]) -> HubError {
        let message = chain.count <= 2 && chain.first == chain.last
            ? "pipeline '\(chain[0])' uses itself as a source"
            : chain.first == chain.last
                ? "pipelines use each other as sources in a cycle: \(chain.joined(separator: " → "))"
                : "pipeline '\(chain.last!)' uses itself as a source"
        return HubError(.pipelineError, message, data: ["line": 1, "column": 1, "cycle": .array(chain.map { .string($0) })])
    }

    private func subscriberArrived() {
        subscriberCount += 1
    }

    private func subscriberLeft() {
        subscriberCount -= 1
        // Nobody left on the connection: the next subscriber starts afresh.
        if subscriberCount == 0 { connection = nil }
    }

    /// What the subscribers of a shared pipeline attach to.
    private typealias SharedOutput = Publishers.Autoconnect<Publishers.Multicast<AnyPublisher<Value, HubError>, PassthroughSubject<Value, HubError>>>

    /// One compiled instance of a shared pipeline, multicast through a subject.
    private final class Connection {
        let subject = PassthroughSubject<Value, HubError>()
        let shared: SharedOutput
        private let latestBox = LatestValue()

        /// The latest value the pipeline emitted, when the pipeline keeps its current value.
        var latest: Value? { latestBox.value }

        init(upstream: AnyPublisher<Value, HubError>, keepsLatest: Bool) {
            let subject = self.subject
            var source = upstream
            if keepsLatest {
                // Recorded before the fan-out, so it is up to date whenever a subscriber joins.
                let box = latestBox
                source = upstream.map { value in
                    box.value = value
                    return value
                }.eraseToAnyPublisher()
            }
            shared = Publishers.Multicast(upstream: source, createSubject: { subject }).autoconnect()
        }
    }

    /// The latest value of a connection, written as the pipeline emits.
    private final class LatestValue {
        var value: Value?
    }

    /// Counts a subscriber from its subscription until it cancels or is completed.
    private struct Counted<Upstream: Publisher>: Publisher where Upstream.Output == Value, Upstream.Failure == HubError {
        typealias Output = Value
        typealias Failure = HubError

        let upstream: Upstream
        let pipeline: NamedPipeline

        func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
            upstream.receive(subscriber: Inner(downstream: subscriber, pipeline: pipeline))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Value, Downstream.Failure == HubError {
            typealias Input = Value
            typealias Failure = HubError

            private var downstream: Downstream?
            private var upstream: (any Subscription)?
            private var pipeline: NamedPipeline?

            init(downstream: Downstream, pipeline: NamedPipeline) {
                self.downstream = downstream
                self.pipeline = pipeline
            }

            func receive(subscription: any Subscription) {
                guard upstream == nil, let downstream else {
                    subscription.cancel()
                    return
                }
                upstream = subscription
                pipeline?.subscriberArrived()
                downstream.receive(subscription: self)
            }

            func receive(_ input: Value) -> Subscribers.Demand {
                downstream?.receive(input) ?? .none
            }

            func receive(completion: Subscribers.Completion<HubError>) {
                guard let downstream = downstream.take() else { return }
                upstream = nil
                leave()
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                upstream?.request(demand)
            }

            func cancel() {
                guard downstream.take() != nil else { return }
                let subscription = upstream.take()
                leave()
                subscription?.cancel()
            }

            private func leave() {
                pipeline.take()?.subscriberLeft()
            }
        }
    }
}
