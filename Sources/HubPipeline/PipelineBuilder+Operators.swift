import HubEngine
import HubValue
import HubWire

extension PipelineBuilder {
    /// Sources that are also operators (`a | merge(b)`).
    static let operatorsNamedLikeSources: Set<String> = ["merge", "combineLatest", "zip", "reduceLatest", "accumulateLatest"]

    /// `tryX` operators fail with `any Error`; the pipeline's failure is ``HubError``.
    private static func typed<P: Publisher>(_ p: P) -> Pub where P.Output == Value {
        p.mapError { hubError($0) }.eraseToAnyPublisher()
    }

    /// The label of a single-argument stage (`first(where: ...)`), checking it is one of `allowed`.
    private func singleLabel(_ stage: StageSyntax, _ allowed: Set<String?>) throws(HubError) -> String? {
        let arguments = stage.arguments ?? []
        for argument in arguments where !allowed.contains(argument.label) {
            guard let label = argument.label else {
                let labels = allowed.compactMap { $0 }.sorted().map { "'\($0):'" }.joined(separator: " or ")
                throw Self.error("\(stage.name) expects \(labels) here", at: argument.position)
            }
            throw Self.error("\(stage.name) has no argument '\(label)'", at: argument.position)
        }
        return arguments.first?.label
    }

    /// One operator of the language: how many arguments it takes, which labels they may
    /// have (`nil` in the set: unlabelled; a `nil` set: the factory checks its own), and
    /// how it is built. The table below is the one list of operators: lookup, the
    /// checks of arity and labels, and error messages' suggestions all use it.
    struct OperatorFactory: Sendable {
        /// How many arguments the operator takes.
        let arity: ClosedRange<Int>
        /// The labels its arguments may have, or `nil` when ``make`` checks them.
        let labels: Set<String?>?
        /// Builds the stage from its (already counted and label-checked) arguments.
        let make: @Sendable (PipelineBuilder) -> (StageSyntax, [ArgumentSyntax]) throws(HubError) -> Operator

        init(
            arity: ClosedRange<Int>, labels: Set<String?>?,
            _ make: @escaping @Sendable (PipelineBuilder) -> (StageSyntax, [ArgumentSyntax]) throws(HubError) -> Operator
        ) {
            self.arity = arity
            self.labels = labels
            self.make = make
        }
    }

    /// Every operator, by name.
    static let operators: [String: OperatorFactory] = [
        "map": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeMap),
        "filter": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeFilter),
        "compactMap": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeCompactMap),
        "scan": OperatorFactory(arity: 2...2, labels: [nil], PipelineBuilder.makeScan),
        "reduce": OperatorFactory(arity: 2...2, labels: [nil], PipelineBuilder.makeScan),
        "removeDuplicates": OperatorFactory(arity: 0...1, labels: ["by"], PipelineBuilder.makeRemoveDuplicates),
        "replaceNil": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeReplaceNil),
        "mapError": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeMapError),
        "prefix": OperatorFactory(arity: 1...1, labels: [nil, "while", "untilOutputFrom"], PipelineBuilder.makePrefix),
        "drop": OperatorFactory(arity: 1...1, labels: [nil, "while", "untilOutputFrom"], PipelineBuilder.makePrefix),
        "dropFirst": OperatorFactory(arity: 0...1, labels: [nil], PipelineBuilder.makeDropFirst),
        "first": OperatorFactory(arity: 0...1, labels: ["where"], PipelineBuilder.makeFirst),
        "last": OperatorFactory(arity: 0...1, labels: ["where"], PipelineBuilder.makeFirst),
        "collect": OperatorFactory(arity: 0...2, labels: [nil], PipelineBuilder.makeCollect),
        "debounce": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeDebounce),
        "delay": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeDelay),
        "throttle": OperatorFactory(arity: 1...2, labels: [nil], PipelineBuilder.makeThrottle),
        "replaceError": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeReplaceError),
        "replaceEmpty": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeReplaceError),
        "retry": OperatorFactory(arity: 0...1, labels: [nil, "backoff"], PipelineBuilder.makeRetry),
        "prepend": OperatorFactory(arity: 1...1024, labels: [nil], PipelineBuilder.makePrepend),
        "append": OperatorFactory(arity: 1...1024, labels: [nil], PipelineBuilder.makePrepend),
        "contains": OperatorFactory(arity: 1...1, labels: [nil, "where"], PipelineBuilder.makeContains),
        "allSatisfy": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeAllSatisfy),
        "count": OperatorFactory(arity: 0...0, labels: nil, PipelineBuilder.makeCount),
        "min": OperatorFactory(arity: 0...1, labels: ["by"], PipelineBuilder.makeMin),
        "sort": OperatorFactory(arity: 0...1, labels: ["by"], PipelineBuilder.makeSort),
        "withLatestFrom": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeWithLatestFrom),
        "into": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeInto),
        "handleEvents": OperatorFactory(arity: 1...6, labels: nil, PipelineBuilder.makeHandleEvents),
        "max": OperatorFactory(arity: 0...1, labels: ["by"], PipelineBuilder.makeMin),
        "output": OperatorFactory(arity: 1...1, labels: [nil, "at", "in"], PipelineBuilder.makeOutput),
        "ignoreOutput": OperatorFactory(arity: 0...0, labels: nil, PipelineBuilder.makeIgnoreOutput),
        "catch": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeCatch),
        "measureInterval": OperatorFactory(arity: 0...0, labels: nil, PipelineBuilder.makeMeasureInterval),
        "timeout": OperatorFactory(arity: 1...2, labels: [nil], PipelineBuilder.makeTimeout),
        "buffer": OperatorFactory(arity: 1...2, labels: [nil], PipelineBuilder.makeBuffer),
        "share": OperatorFactory(arity: 0...0, labels: nil, PipelineBuilder.makeShare),
        "flatMap": OperatorFactory(arity: 1...2, labels: nil, PipelineBuilder.makeFlatMap),
        "switchToLatest": OperatorFactory(arity: 1...1, labels: [nil], PipelineBuilder.makeSwitchToLatest),
        "wait": OperatorFactory(arity: 1...1, labels: [nil, "untilOutputFrom"], PipelineBuilder.makeWait),
        "merge": OperatorFactory(arity: 0...Int.max, labels: nil, PipelineBuilder.makeMerge),
        "combineLatest": OperatorFactory(arity: 0...Int.max, labels: nil, PipelineBuilder.makeMerge),
        "zip": OperatorFactory(arity: 0...Int.max, labels: nil, PipelineBuilder.makeMerge),
        "reduceLatest": OperatorFactory(arity: 0...Int.max, labels: nil, PipelineBuilder.makeMerge),
        "accumulateLatest": OperatorFactory(arity: 0...Int.max, labels: nil, PipelineBuilder.makeMerge),
        "groupBy": OperatorFactory(arity: 0...4, labels: nil, PipelineBuilder.makeGroupBy),
        "tumbling": OperatorFactory(arity: 0...7, labels: nil, PipelineBuilder.makeWindow),
        "hopping": OperatorFactory(arity: 0...8, labels: nil, PipelineBuilder.makeWindow),
        "session": OperatorFactory(arity: 0...7, labels: nil, PipelineBuilder.makeWindow),
        "join": OperatorFactory(arity: 0...7, labels: nil, PipelineBuilder.makeJoin),
        "lookup": OperatorFactory(arity: 0...6, labels: nil, PipelineBuilder.makeJoin),
    ]

    /// Every operator name (for error messages).
    static let operatorNames: Set<String> = Set(operators.keys)

    /// One operator stage: its factory from the table, after the table's checks of
    /// the arguments' count and labels.
    func `operator`(_ stage: StageSyntax) throws(HubError) -> Operator {
        guard let factory = Self.operators[stage.name] else {
            throw Self.error("unknown operator '\(stage.name)'\(Self.didYouMean(stage.name, among: Self.operatorNames))", at: stage.position)
        }
        let arguments = try self.arguments(stage, factory.arity)
        if let labels = factory.labels { _ = try singleLabel(stage, labels) }
        return try factory.make(self)(stage, arguments)
    }

    private func makeMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in up.compactMap { value in Self.skipping(skip) { () throws(HubError) in try f(value, nil) } }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryMap { try f($0, nil) }) }
    }

    private func makeFilter(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in up.filter { Self.truth(skip, f, $0) ?? false }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryFilter { ExpressionEvaluator.isTruthy(try f($0, nil)) }) }
    }

    private func makeCompactMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in
                up.compactMap { value in Self.skipping(skip) { () throws(HubError) in try f(value, nil) }.flatMap { $0.isNull ? nil : $0 } }
                    .eraseToAnyPublisher()
            }
        }
        return { up, _ in
            Self.typed(up.tryCompactMap { value -> Value? in
                let result = try f(value, nil)
                return result.isNull ? Optional<Value>.none : result
            })
        }
    }

    private func makeScan(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let initial = try constant(arguments[0], of: stage)
        let f = try element(arguments[1], of: stage, variable: "acc")
        let isScan = stage.name == "scan"
        let path = statePath
        if let skip = environment.skipFailure {
            // A value the reducer fails on leaves the accumulator as it was, and emits nothing.
            return { up, outer throws(HubError) in
                let start = try initial(outer)
                if isScan {
                    // Whether the last value changed the accumulator is not state: it is read at once.
                    let state = self.slot(path).map {
                        OperatorState<(state: Value, changed: Bool)>(
                            slot: $0, codec: StateCodec(encode: { $0.state }, decode: { ($0, false) }))
                    }
                    return up.scan((state: start, changed: false), state: state) { acc, value in
                        guard let next = Self.skipping(skip, { () throws(HubError) in try f(value, acc.state) }) else {
                            return (acc.state, false)
                        }
                        return (next, true)
                    }
                    .compactMap { $0.changed ? $0.state : nil }
                    .eraseToAnyPublisher()
                }
                return Publishers.Reduce(
                    upstream: up, initial: start,
                    nextPartialResult: { acc, value in Self.skipping(skip) { () throws(HubError) in try f(value, acc) } ?? acc },
                    state: self.state(path)
                ).eraseToAnyPublisher()
            }
        }
        return { up, outer throws(HubError) in
            let start = try initial(outer)
            if isScan { return Self.typed(up.tryScan(start, state: self.state(path)) { acc, value in try f(value, acc) }) }
            return Self.typed(Publishers.TryReduce(
                upstream: up, initial: start, nextPartialResult: { acc, value in try f(value, acc) }, state: self.state(path)))
        }
    }

    private func makeRemoveDuplicates(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let path = statePath
        guard let argument = arguments.first else {
            return { up, _ in Publishers.RemoveDuplicates(upstream: up, predicate: ==, state: self.state(path)).eraseToAnyPublisher() }
        }
        let f = try element(argument, of: stage, variable: "prev")
        if let skip = environment.skipFailure {
            // A comparison that fails drops the value, as a duplicate would be.
            return { up, _ in
                Publishers.RemoveDuplicates(upstream: up, predicate: { previous, value in
                    Self.skipping(skip) { () throws(HubError) in ExpressionEvaluator.isTruthy(try f(value, previous)) } ?? true
                }, state: self.state(path)).eraseToAnyPublisher()
            }
        }
        return { up, _ in
            Self.typed(Publishers.TryRemoveDuplicates(
                upstream: up, predicate: { previous, value in ExpressionEvaluator.isTruthy(try f(value, previous)) },
                state: self.state(path)))
        }
    }

    // MARK: Skipping failing values (a named pipeline with onError: skip)

    /// The result of `body`, or `nil` after handing its failure to `skip`.
    static func skipping<T>(_ skip: (HubError) -> Void, _ body: () throws(HubError) -> T) -> T? {
        do {
            return try body()
        } catch {
            skip(error)
            return nil
        }
    }

    /// Whether `f` holds for `value`, or `nil` (the value is skipped) when it fails.
    static func truth(_ skip: (HubError) -> Void, _ f: ElementFunction, _ value: Value) -> Bool? {
        skipping(skip) { () throws(HubError) in ExpressionEvaluator.isTruthy(try f(value, nil)) }
    }

    /// Each value with its predicate's truth, `[value, bool]`, the values it fails on dropped:
    /// what a predicate operator works on when failing values are skipped.
    static func judged(_ up: Pub, _ skip: @escaping (HubError) -> Void, _ f: @escaping ElementFunction) -> Pub {
        up.compactMap { value in truth(skip, f, value).map { Value.array([value, .bool($0)]) } }.eraseToAnyPublisher()
    }

    /// The truth in a `[value, bool]` pair of ``judged(_:_:_:)``.
    static func judgement(_ pair: Value) -> Bool { pair[1] == .bool(true) }

    /// The value in a `[value, bool]` pair of ``judged(_:_:_:)``.
    static func judgedValue(_ pair: Value) -> Value { pair[0] ?? .null }

    private func makeReplaceNil(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let value = try constant(arguments[0], of: stage)
        return { up, outer throws(HubError) in
            let replacement = try value(outer)
            return up.map { $0.isNull ? replacement : $0 }.eraseToAnyPublisher()
        }
    }

    private func makeMapError(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        return { up, _ in
            up.catch { error -> Fail<Value, HubError> in
                do throws(HubError) {
                    return Fail(error: HubError.failed(try f(Self.errorValue(error), nil), message: error.message))
                } catch {
                    return Fail(error: error)
                }
            }.eraseToAnyPublisher()
        }
    }

    private func makePrefix(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let argument = arguments[0]
        let isPrefix = stage.name == "prefix"
        let path = statePath
        switch arguments.first?.label {
        case "while":
            let f = try element(argument, of: stage)
            if let skip = environment.skipFailure {
                return { up, _ in
                    let pairs = Self.judged(up, skip, f)
                    if isPrefix { return pairs.prefix(while: Self.judgement).map(Self.judgedValue).eraseToAnyPublisher() }
                    let passed = self.flag(path, kind: "dropWhile")
                    return pairs.drop { pair in
                        guard !passed.value else { return false }
                        let dropped = Self.judgement(pair)
                        if !dropped { passed.value = true }
                        return dropped
                    }.map(Self.judgedValue).eraseToAnyPublisher()
                }
            }
            return { up, _ in
                if isPrefix { return Self.typed(up.tryPrefix { ExpressionEvaluator.isTruthy(try f($0, nil)) }) }
                // Once a value passed, drop(while:) drops nothing more, also after a restart.
                let passed = self.flag(path, kind: "dropWhile")
                return Self.typed(up.tryDrop { value in
                    guard !passed.value else { return false }
                    let dropped = ExpressionEvaluator.isTruthy(try f(value, nil))
                    if !dropped { passed.value = true }
                    return dropped
                })
            }
        case "untilOutputFrom":
            let other = try pipeline(argument, of: stage)
            return { up, outer throws(HubError) in
                let signal = try other(outer)
                return isPrefix
                    ? up.prefix(untilOutputFrom: signal).eraseToAnyPublisher()
                    : up.drop(untilOutputFrom: signal).eraseToAnyPublisher()
            }
        default:
            let n = try count(argument, of: stage)
            return { up, outer throws(HubError) in
                let count = try n(outer)
                return isPrefix
                    ? Publishers.Output(upstream: up, range: 0..<count, state: self.slot(path)).eraseToAnyPublisher()
                    : Publishers.Drop(upstream: up, count: count, state: self.slot(path)).eraseToAnyPublisher()
            }
        }
    }

    private func makeDropFirst(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let n = arguments.isEmpty ? nil : try count(arguments[0], of: stage)
        let path = statePath
        return { up, outer throws(HubError) in
            Publishers.Drop(upstream: up, count: try n?(outer) ?? 1, state: self.slot(path)).eraseToAnyPublisher()
        }
    }

    private func makeFirst(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let isFirst = stage.name == "first"
        if arguments.isEmpty {
            return { up, _ in isFirst ? up.first().eraseToAnyPublisher() : up.last().eraseToAnyPublisher() }
        }
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in
                isFirst
                    ? up.first { Self.truth(skip, f, $0) ?? false }.eraseToAnyPublisher()
                    : up.last { Self.truth(skip, f, $0) ?? false }.eraseToAnyPublisher()
            }
        }
        return { up, _ in
            isFirst
                ? Self.typed(up.tryFirst { ExpressionEvaluator.isTruthy(try f($0, nil)) })
                : Self.typed(up.tryLast { ExpressionEvaluator.isTruthy(try f($0, nil)) })
        }
    }

    private func makeCollect(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        let path = statePath
        guard let argument = arguments.first else {
            return { up, _ in
                self.holdingInputs([up], stage, release: .everything) {
                    Publishers.Collect(upstream: $0[0], state: self.state(path)).map { Value.array($0) }.eraseToAnyPublisher()
                }
            }
        }
        if case .duration = argument.kind {
            let d = try duration(argument, of: stage)
            let n = arguments.count > 1 ? try count(arguments[1], of: stage) : nil
            return { up, outer throws(HubError) in
                let size = try n?(outer)
                if let size, size < 1 { throw Self.error("collect needs a count of at least 1", at: arguments[1].position) }
                return self.holdingInputs([up], stage, release: .everything) {
                    Self.collect($0[0], every: d, count: size, scheduler, state: self.state(path))
                }
            }
        }
        guard arguments.count == 1 else {
            throw Self.error("collect takes a count, or a duration and an optional count", at: arguments[1].position)
        }
        let n = try count(argument, of: stage)
        return { up, outer throws(HubError) in
            let size = try n(outer)
            guard size > 0 else { throw Self.error("collect needs a count of at least 1", at: argument.position) }
            return self.holdingInputs([up], stage, release: .everything) {
                Publishers.CollectByCount(upstream: $0[0], count: size, state: self.state(path)).map { Value.array($0) }
                    .eraseToAnyPublisher()
            }
        }
    }

    private func makeDebounce(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        let d = try duration(arguments[0], of: stage)
        let path = statePath
        return { up, _ in Self.debounce(up, d, scheduler, state: self.state(path)) }
    }

    private func makeDelay(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        let d = try duration(arguments[0], of: stage)
        let path = statePath
        return { up, _ in
            // A running pipeline has no budget: its values in flight are checkpointed as they are.
            if self.environment.budget == nil, let state = self.state(path) { return Self.delay(up, d, scheduler, state: state) }
            return self.holdingValues(up, stage) { Self.delayed($0, d, scheduler) }
        }
    }

    private func makeThrottle(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    private func makeReplaceError(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let value = try constant(arguments[0], of: stage)
        let isError = stage.name == "replaceError"
        return { up, outer throws(HubError) in
            let v = try value(outer)
            if isError {
                return up.replaceError(with: v).setFailureType(to: HubError.self).eraseToAnyPublisher()
            }
            return up.replaceEmpty(with: v).eraseToAnyPublisher()
        }
    }

    /// The first wait of `retry()` between attempts, doubled after each failure up to ``retryMaximumBackoff``.
    static let retryBackoff: Duration = .milliseconds(100)
    /// The longest wait of `retry()`.
    static let retryMaximumBackoff: Duration = .seconds(30)

    private func makeRetry(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        if let argument = arguments.first, argument.label == nil {
            let n = try count(argument, of: stage)
            return { up, outer throws(HubError) in
                let times = try n(outer)
                // Resubscriptions run synchronously: the count is bounded so that a source that
                // fails at once cannot hold the loop (each attempt is also charged to the budget).
                guard times <= Self.maximumRetries else {
                    throw Self.error(
                        "retry: at most \(Self.maximumRetries) retries, got \(times) (use retry() to retry after a delay)",
                        at: argument.position)
                }
                return self.retrying(up, times, stage)
            }
        }
        // retry() / retry(backoff: d): forever, on the hub's scheduler, waiting between attempts
        // (at least the minimum interval of the limits), so that a failing upstream cannot spin.
        // A limit_exceeded failure is not retried: the same limit would refuse the next attempt,
        // and retrying would hide from the subscriber why nothing comes.
        let initial = try arguments.first.map { argument throws(HubError) in try duration(argument, of: stage) } ?? Self.retryBackoff
        let maximum = Swift.max(Self.retryMaximumBackoff, initial)
        let scheduler = environment.scheduler
        return { up, _ in Self.retryForever(up, initial, maximum, scheduler) }
    }

    static func retryForever<S: Scheduler>(_ up: Pub, _ initial: Duration, _ maximum: Duration, _ scheduler: S) -> Pub {
        up.retry(backoff: initial, maximum: maximum, scheduler: scheduler, isRetryable: { $0.code != .limitExceeded })
            .eraseToAnyPublisher()
    }

    private func makePrepend(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let isPrepend = stage.name == "prepend"
        let path = statePath
        // Checkpointed, it keeps whether its first part has finished: `input | scan(…) | prepend(s)`
        // does not emit `s` again when the pipeline resumes.
        let concatenate: (Pub, Pub) -> Pub = { first, second in
            Publishers.Concatenate(prefix: first, suffix: second, state: self.slot(path)).eraseToAnyPublisher()
        }
        if let only = stage.arguments?.first, stage.arguments?.count == 1, Self.denotesPipeline(only) {
            let other = try pipeline(only, of: stage)
            return { up, outer throws(HubError) in
                let p = try other(outer)
                return isPrepend ? concatenate(p, up) : concatenate(up, p)
            }
        }
        var values: [(Value) throws(HubError) -> Value] = []
        for argument in arguments { values.append(try constant(argument, of: stage)) }
        return { [values] up, outer throws(HubError) in
            var list: [Value] = []
            for v in values { list.append(try v(outer)) }
            let extra = Publishers.Sequence<[Value], HubError>(sequence: list).eraseToAnyPublisher()
            return isPrepend ? concatenate(extra, up) : concatenate(up, extra)
        }
    }

    private func makeContains(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let argument = arguments[0]
        if arguments.first?.label == "where" {
            let f = try element(argument, of: stage)
            if let skip = environment.skipFailure {
                return { up, _ in up.contains { Self.truth(skip, f, $0) ?? false }.map { Value.bool($0) }.eraseToAnyPublisher() }
            }
            return { up, _ in Self.typed(up.tryContains { ExpressionEvaluator.isTruthy(try f($0, nil)) }.map { Value.bool($0) }) }
        }
        let value = try constant(argument, of: stage)
        return { up, outer throws(HubError) in
            up.contains(try value(outer)).map { Value.bool($0) }.eraseToAnyPublisher()
        }
    }

    private func makeAllSatisfy(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in Self.judged(up, skip, f).allSatisfy(Self.judgement).map { Value.bool($0) }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryAllSatisfy { ExpressionEvaluator.isTruthy(try f($0, nil)) }.map { Value.bool($0) }) }
    }

    private func makeCount(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let path = statePath
        return { up, _ in Publishers.Count(upstream: up, state: self.intState(path)).map { Value.int(Int64($0)) }.eraseToAnyPublisher() }
    }

    private func makeMin(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let isMin = stage.name == "min"
        let order = try ordering(stage, arguments.first)
        let path = statePath
        return { up, _ in
            // min is max in the reversed order, as Combine's tryMin(by:).
            Self.typed(Publishers.TryComparison(
                upstream: up, areInIncreasingOrder: isMin ? { try order($1, $0) } : order, state: self.state(path)))
        }
    }

    /// `sort()`, `sort(by: e)`: every value, once the upstream has finished, in one array in
    /// ascending order (stable: equal values keep their order).
    private func makeSort(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let order = try ordering(stage, arguments.first)
        let path = statePath
        return { up, _ in
            // Every value is held until the upstream finishes: counted in the budget's memory.
            self.holdingInputs([up], stage, release: .everything) { inputs in
            Self.typed(Publishers.Collect(upstream: inputs[0], state: self.state(path)).tryMap { values -> Value in
                var failure: (any Error)?
                let sorted = values.indices.sorted { i, j in
                    guard failure == nil else { return false }
                    do {
                        if try order(values[i], values[j]) { return true }
                        if try order(values[j], values[i]) { return false }
                        return i < j
                    } catch {
                        failure = error
                        return false
                    }
                }
                if let failure { throw failure }
                return .array(sorted.map { values[$0] })
            })
            }
        }
    }

    /// The order of `min`, `max` and `sort`: the expression `by:` (whether `$a` comes before
    /// `$b`), or the natural order of numbers and of strings.
    private func ordering(_ stage: StageSyntax, _ argument: ArgumentSyntax?) throws(HubError) -> (Value, Value) throws -> Bool {
        if let argument {
            let e = try expression(argument, of: stage, variables: ["a", "b"])
            let evaluate = evaluation(e, of: stage)
            return { a, b in
                ExpressionEvaluator.isTruthy(try evaluate(.null, ["$a": a, "$b": b]))
            }
        }
        let text = stage.text
        return { a, b in
            guard let o = ExpressionEvaluator.compare(a, b) else {
                let message = "cannot compare \(ExpressionEvaluator.typeName(a)) and \(ExpressionEvaluator.typeName(b))"
                throw HubError(.failed, "\(text): \(message)", data: .object(["stage": .string(text), "error": .string(message)]))
            }
            return o < 0
        }
    }

    private func makeWithLatestFrom(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let other = try pipeline(arguments[0], of: stage)
        let path = statePath
        return { up, outer throws(HubError) in
            Publishers.WithLatestFrom(
                upstream: up, other: try other(outer), transform: { Value.array([$0, $1]) }, state: self.state(path)
            ).eraseToAnyPublisher()
        }
    }

    private func makeOutput(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let argument = arguments[0]
        let path = statePath
        if arguments.first?.label == "in" {
            let range = try constant(argument, of: stage)
            return { up, outer throws(HubError) in
                let r = try range(outer)
                guard case let .array(bounds) = r, bounds.count == 2, let lower = bounds[0].intValue,
                      let upper = bounds[1].intValue, lower >= 0, upper >= lower, upper <= Int64(Int32.max)
                else { throw Self.error("output(in:) needs [lower, upper] with 0 <= lower <= upper", at: argument.position) }
                // Combine's closed range lower...upper: output(in: [2, 3]) gives the third and fourth values.
                return Publishers.Output(upstream: up, range: Int(lower)..<(Int(upper) + 1), state: self.slot(path))
                    .eraseToAnyPublisher()
            }
        }
        let n = try count(argument, of: stage)
        return { up, outer throws(HubError) in
            let index = try n(outer)
            return Publishers.Output(upstream: up, range: index..<(index + 1), state: self.slot(path)).eraseToAnyPublisher()
        }
    }

    private func makeIgnoreOutput(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        return { up, _ in up.ignoreOutput().map { never -> Value in }.eraseToAnyPublisher() }
    }

    private func makeCatch(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let handler = try pipeline(arguments[0], of: stage)
        return { up, _ in
            up.catch { error in self.withoutState { Self.built(handler, Self.errorValue(error)) } }.eraseToAnyPublisher()
        }
    }

    private func makeMeasureInterval(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
        return { up, _ in Self.measureInterval(up, scheduler) }
    }

    private func makeTimeout(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let scheduler = environment.scheduler
                let d = try duration(arguments[0], of: stage, checkMinimum: false)
        let failure = arguments.count > 1 ? try constant(arguments[1], of: stage) : nil
        return { up, outer throws(HubError) in
            let error = try failure.map { f throws(HubError) in HubError.failed(try f(outer), message: "timed out") }
            return Self.timeout(up, d, error, scheduler)
        }
    }

    private func makeBuffer(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let n = try count(arguments[0], of: stage)
        var strategy = "dropOldest"
        if arguments.count == 2 {
            guard let word = Self.word(arguments[1]), ["dropOldest", "dropNewest", "error"].contains(word) else {
                throw Self.error("buffer's second argument is dropOldest, dropNewest or error", at: arguments[1].position)
            }
            strategy = word
        }
        let path = statePath
        return { [strategy] up, outer throws(HubError) in
            let size = try n(outer)
            let whenFull: Publishers.BufferingStrategy<HubError>
            switch strategy {
            case "dropNewest": whenFull = .dropNewest
            case "error": whenFull = .customError { HubError(.overflow, "buffer(\(size)) overflowed") }
            default: whenFull = .dropOldest
            }
            // A running pipeline has no budget: its buffered values are checkpointed as they are.
            if self.environment.budget == nil, let state = self.state(path) {
                return Publishers.Buffer(upstream: up, size: size, prefetch: .byRequest, whenFull: whenFull, state: state)
                    .eraseToAnyPublisher()
            }
            return self.holdingValues(up, stage) {
                $0.buffer(size: size, prefetch: .byRequest, whenFull: whenFull).eraseToAnyPublisher()
            }
        }
    }

    private func makeShare(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        return { up, _ in up.share().eraseToAnyPublisher() }
    }

    private func makeFlatMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        guard arguments[0].label == nil else { throw Self.error("flatMap's first argument is a pipeline", at: arguments[0].position) }
        let inner = try pipeline(arguments[0], of: stage)
        var maximum: ((Value) throws(HubError) -> Int)?
        if arguments.count == 2 {
            guard arguments[1].label == "maxPublishers" else {
                throw Self.error("flatMap's second argument is 'maxPublishers:'", at: arguments[1].position)
            }
            maximum = try count(arguments[1], of: stage)
        }
        let path = statePath
        return { [maximum] up, outer throws(HubError) in
            let demand: Subscribers.Demand = try maximum.map { m throws(HubError) in .max(try m(outer)) } ?? .unlimited
            // Checkpointed, each inner pipeline is built in a scope of its own and restored with it.
            return Publishers.FlatMap(
                upstream: up, maxPublishers: demand, transform: { value in Self.built(inner, value) },
                state: self.state(path), outputCodec: .value
            ).eraseToAnyPublisher()
        }
    }

    private func makeSwitchToLatest(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let inner = try pipeline(arguments[0], of: stage)
        return { up, _ in
            up.map { value in self.withoutState { Self.built(inner, value) } }.switchToLatest().eraseToAnyPublisher()
        }
    }

    private func makeWait(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        _ = arguments.first?.label
        let signal = try pipeline(arguments[0], of: stage)
        return { up, outer throws(HubError) in
            up.wait(untilOutputFrom: Self.signal(try signal(outer))).eraseToAnyPublisher()
        }
    }

    private func makeMerge(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let others = try pipelines(stage, atLeast: 1)
        let name = stage.name
        let path = statePath
        return { up, outer throws(HubError) in self.combined(name, [up] + (try Self.buildAll(others, outer)), stage, path: path) }
    }

    /// The publisher `build` makes for `value`, or a failing one when building fails.
    static func built(_ build: Build, _ value: Value) -> Pub {
        do {
            return try build(value)
        } catch {
            return Fail<Value, HubError>(error: error).eraseToAnyPublisher()
        }
    }

    /// How an error reads as `.` in `catch`: `{"code": ..., "message": ..., "data": ...}`.
    static func errorValue(_ error: HubError) -> Value {
        .object(["code": .string(error.code.rawValue), "message": .string(error.message), "data": error.data ?? .null])
    }

    /// Whether an argument is a pipeline rather than a value: `a | b`, a bare name, or a call
    /// of something that is not a function of expressions.
    static func denotesPipeline(_ argument: ArgumentSyntax) -> Bool {
        switch argument.kind {
        case .pipeline: return true
        case .duration: return false
        case let .expression(e):
            switch e.kind {
            case .name, .pipeline: return true
            case let .call(name, _, _): return ExpressionFunctions.arity[name] == nil
            case let .conditional(_, then, otherwise):
                return denotesPipeline(ArgumentSyntax(label: nil, kind: .expression(then), position: then.position))
                    && denotesPipeline(ArgumentSyntax(label: nil, kind: .expression(otherwise), position: otherwise.position))
            default: return false
            }
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
