import HubEngine
import HubValue
import HubWire

/// A value a stage keeps for later (in a buffer, a delay), with its estimated bytes held
/// in a ``ResourceLease`` for as long as the box lives: whatever the stage does with it
/// (delivers it, drops it, is cancelled), freeing the box gives the bytes back.
final class HeldValue {
    let value: Value
    private let bytes: Int
    private let lease: ResourceLease

    init(_ value: Value, bytes: Int, lease: ResourceLease) {
        self.value = value
        self.bytes = bytes
        self.lease = lease
    }

    deinit { lease.release(bytes) }
}

extension PipelineBuilder {
    /// Steps a pipeline (or a nested pipeline, built per value by `flatMap`, …) costs to build.
    static let buildSteps = 200
    /// Bytes a built pipeline is counted for while it runs (its operators' objects).
    static let buildBytes = 1024
    /// The most retries `retry(n)` may ask for: its resubscriptions run synchronously.
    static let maximumRetries = 10_000
    /// Steps one resubscription of `retry` costs.
    static let retrySteps = 100

    /// `publisher`, keeping `lease` until its subscription ends (completion, failure or
    /// cancellation) or the publisher is dropped unsubscribed.
    static func holding(_ lease: ResourceLease, _ publisher: Pub) -> Pub {
        publisher
            .handleEvents(receiveCompletion: { _ in lease.release() }, receiveCancel: { lease.release() })
            .eraseToAnyPublisher()
    }

    /// A publisher that makes a fresh publisher per subscription, or fails with the error
    /// `make` throws.
    static func deferred(_ make: @escaping () throws(HubError) -> Pub) -> Pub {
        Deferred { () -> Pub in
            do throws(HubError) {
                return try make()
            } catch {
                return Fail<Value, HubError>(error: error).eraseToAnyPublisher()
            }
        }
        .eraseToAnyPublisher()
    }

    /// A built pipeline, charged to the environment's budget: ``buildSteps`` steps now and
    /// ``buildBytes`` bytes for as long as it runs.
    static func charged(_ budget: ResourceBudget?, _ what: String, _ build: () throws(HubError) -> Pub) throws(HubError) -> Pub {
        guard let budget else { return try build() }
        try budget.charge(buildSteps, for: what)
        let lease = try budget.lease(bytes: buildBytes, for: what)
        return holding(lease, try build())
    }

    /// `up` with every value held in the environment's budget from when it enters
    /// `stage` (`through`) until it leaves it: for the stages that keep values for later
    /// (`buffer`, `delay`). Without a budget, `through` works on the values directly.
    func holdingValues(
        _ up: Pub, _ stage: StageSyntax,
        through: @escaping (AnyPublisher<HeldValue, HubError>) -> AnyPublisher<HeldValue, HubError>
    ) -> Pub {
        guard let budget = environment.budget else {
            let unbudgeted = ResourceBudget(owner: "unbudgeted", limits: .unbounded, clock: { .zero })
            return through(Self.boxed(up, lease: ResourceLease(on: unbudgeted), stage, measuring: false))
                .map(\.value).eraseToAnyPublisher()
        }
        return Self.deferred { () throws(HubError) -> Pub in
            let lease = ResourceLease(on: budget)
            return through(Self.boxed(up, lease: lease, stage, measuring: true)).map(\.value).eraseToAnyPublisher()
        }
    }

    private static func boxed(_ up: Pub, lease: ResourceLease, _ stage: StageSyntax, measuring: Bool) -> AnyPublisher<HeldValue, HubError> {
        let text = stage.text
        return up.tryMap { value throws -> HeldValue in
            guard measuring else { return HeldValue(value, bytes: 0, lease: lease) }
            let bytes = value.estimatedBytes
            try lease.hold(bytes, for: text)
            return HeldValue(value, bytes: bytes, lease: lease)
        }
        .mapError { hubError($0) }
        .eraseToAnyPublisher()
    }

    /// `combine(inputs)` for stages that keep their inputs' values until they leave in an
    /// output array (`zip`, `collect`): each value is held in the budget from when it
    /// arrives until an output carries it (`release: .elements`) or until the stage
    /// emits at all (`release: .everything`, for stages whose output takes everything
    /// held), and the output is checked against the value limits.
    func holdingInputs(
        _ inputs: [Pub], _ stage: StageSyntax, release: HeldRelease, _ combine: @escaping ([Pub]) -> Pub
    ) -> Pub {
        let limits = self.limits
        guard let budget = environment.budget else {
            return combine(inputs).tryMap { output throws -> Value in
                try Self.checkBuilt(output, in: stage, limits: limits, budget: nil)
                return output
            }
            .mapError { Self.hubError($0) }.eraseToAnyPublisher()
        }
        let text = stage.text
        return Self.deferred { () throws(HubError) -> Pub in
            let lease = ResourceLease(on: budget)
            let metered = inputs.map { input in
                input.tryMap { value throws -> Value in
                    try lease.hold(value.estimatedBytes, for: text)
                    return value
                }
                .mapError { Self.hubError($0) }.eraseToAnyPublisher()
            }
            let output = combine(metered).tryMap { output throws -> Value in
                switch release {
                case .everything:
                    lease.release()
                case .elements:
                    for element in output.arrayValue ?? [] { lease.release(element.estimatedBytes) }
                }
                try Self.checkBuilt(output, in: stage, limits: limits, budget: budget)
                return output
            }
            .mapError { Self.hubError($0) }.eraseToAnyPublisher()
            return Self.holding(lease, output)
        }
    }

    /// What an output of ``holdingInputs(_:_:release:_:)`` gives back.
    enum HeldRelease {
        /// The bytes of the values in the output array.
        case elements
        /// Everything held: the output took every value the stage had.
        case everything
    }

    /// The combination `name` of `inputs` (``combining(_:_:)``); `zip`, which keeps its
    /// inputs' values until each has a partner, holds them in the budget.
    func combined(_ name: String, _ inputs: [Pub], _ stage: StageSyntax, path: String) -> Pub {
        let state = name == "merge" ? nil : self.state(path)
        guard name == "zip" else { return Self.combining(name, inputs, state: state) }
        return holdingInputs(inputs, stage, release: .elements) { Self.combining("zip", $0, state: state) }
    }

    /// `retry(n)` whose every resubscription is charged ``retrySteps`` to the budget (once
    /// the budget is spent, the attempts fail at once, `n` at most).
    func retrying(_ up: Pub, _ count: Int, _ stage: StageSyntax) -> Pub {
        guard let budget = environment.budget else { return up.retry(count).eraseToAnyPublisher() }
        let text = stage.text
        let attempt = Self.deferred { () throws(HubError) -> Pub in
            try budget.charge(Self.retrySteps, for: text)
            return up
        }
        return attempt.retry(count).eraseToAnyPublisher()
    }

    /// `delay` over held values.
    static func delayed<S: Scheduler>(_ up: AnyPublisher<HeldValue, HubError>, _ d: Duration, _ s: S) -> AnyPublisher<HeldValue, HubError> {
        up.delay(for: d, scheduler: s).eraseToAnyPublisher()
    }

    /// The publisher of `sequence(list)`, holding the list's bytes while it runs.
    func sequencePublisher(_ list: [Value], _ stage: StageSyntax) throws(HubError) -> Pub {
        let publisher = Publishers.Sequence<[Value], HubError>(sequence: list).eraseToAnyPublisher()
        guard let budget = environment.budget else { return publisher }
        let bytes = Value.array(list).estimatedBytes
        return Self.holding(try budget.lease(bytes: bytes, for: stage.text), publisher)
    }

    /// A timer counted against the budget's live timers while it runs.
    func countedTimer(_ timer: Pub, _ stage: StageSyntax) -> Pub {
        guard let budget = environment.budget else { return timer }
        let text = stage.text
        return Self.deferred { () throws(HubError) -> Pub in Self.holding(try budget.startTimer(for: text), timer) }
    }
}
