import HubEngine
import HubValue
import HubWire

/// Operators in time (on the pipeline's scheduler): debounce, delay, throttle,
/// measureInterval, timeout, and collect's time grouping.
extension PipelineBuilder {
    func makeDebounce(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        let d = try duration(arguments[0], of: stage)
        let path = statePath
        return { up, _ in Self.debounce(up, d, scheduler, state: self.state(path)) }
    }

    func makeDelay(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        let d = try duration(arguments[0], of: stage)
        let path = statePath
        return { up, _ in
            // A running pipeline has no budget: its values in flight are checkpointed as they are.
            if self.environment.budget == nil, let state = self.state(path) { return Self.delay(up, d, scheduler, state: state) }
            return self.holdingValues(up, stage) { Self.delayed($0, d, scheduler) }
        }
    }

    func makeThrottle(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
                let d = try duration(arguments[0], of: stage)
        var latest = false
        if arguments.count == 2 {
            switch Self.word(arguments[1]) {
            case "latest": latest = true
            case "first": latest = false
            default: throw Self.error("throttle's second argument is 'latest' or 'first'", at: arguments[1].position)
            }
        }
        let path = statePath
        return { [latest] up, _ in Self.throttle(up, d, latest, scheduler, state: self.state(path)) }
    }

    func makeMeasureInterval(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        return { up, _ in Self.measureInterval(up, scheduler) }
    }

    func makeTimeout(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
                let d = try duration(arguments[0], of: stage, checkMinimum: false)
        let failure = arguments.count > 1 ? try constant(arguments[1], of: stage) : nil
        return { up, outer throws(HubError) in
            let error = try failure.map { f throws(HubError) in HubError.failed(try f(outer), message: "timed out") }
            return Self.timeout(up, d, error, scheduler)
        }
    }

    static func collect<S: Scheduler>(_ up: Pub, every d: Duration, count: Int?, _ s: S, state: OperatorState<Value>?) -> Pub {
        let strategy: Publishers.TimeGroupingStrategy<S> = count.map { .byTimeOrCount(s, d, $0) } ?? .byTime(s, d)
        return Publishers.CollectByTime(upstream: up, strategy: strategy, state: state).map { Value.array($0) }.eraseToAnyPublisher()
    }

    static func debounce<S: Scheduler>(_ up: Pub, _ d: Duration, _ s: S, state: OperatorState<Value>?) -> Pub {
        Publishers.Debounce(upstream: up, dueTime: d, scheduler: s, state: state).eraseToAnyPublisher()
    }

    static func delay<S: Scheduler>(_ up: Pub, _ d: Duration, _ s: S, state: OperatorState<Value>? = nil) -> Pub {
        Publishers.Delay(upstream: up, interval: d, scheduler: s, state: state).eraseToAnyPublisher()
    }

    static func throttle<S: Scheduler>(_ up: Pub, _ d: Duration, _ latest: Bool, _ s: S, state: OperatorState<Value>?) -> Pub {
        Publishers.Throttle(upstream: up, interval: d, scheduler: s, latest: latest, state: state).eraseToAnyPublisher()
    }

    static func timeout<S: Scheduler>(_ up: Pub, _ d: Duration, _ error: HubError?, _ s: S) -> Pub {
        up.timeout(d, scheduler: s, customError: error.map { e in { e } }).eraseToAnyPublisher()
    }

    /// Intervals in milliseconds (an integer when whole).
    static func measureInterval<S: Scheduler>(_ up: Pub, _ s: S) -> Pub {
        up.measureInterval(using: s).map { d -> Value in
            let ns = d.nanosecondsClamped
            return ns % 1_000_000 == 0 ? .int(ns / 1_000_000) : .double(Double(ns) / 1e6)
        }.eraseToAnyPublisher()
    }
}
