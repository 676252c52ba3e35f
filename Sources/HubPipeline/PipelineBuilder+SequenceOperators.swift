import HubEngine
import HubValue
import HubWire

/// Operators on the sequence of values: prefix and drop, dropFirst, first and last,
/// collect, prepend and append, contains, allSatisfy, count, min, max, sort, output,
/// ignoreOutput, buffer.
extension PipelineBuilder {
    func makePrefix(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeDropFirst(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let n = arguments.isEmpty ? nil : try count(arguments[0], of: stage)
        let path = statePath
        return { up, outer throws(HubError) in
            Publishers.Drop(upstream: up, count: try n?(outer) ?? 1, state: self.slot(path)).eraseToAnyPublisher()
        }
    }

    func makeFirst(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeCollect(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makePrepend(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeContains(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeAllSatisfy(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in Self.judged(up, skip, f).allSatisfy(Self.judgement).map { Value.bool($0) }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryAllSatisfy { ExpressionEvaluator.isTruthy(try f($0, nil)) }.map { Value.bool($0) }) }
    }

    func makeCount(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let path = statePath
        return { up, _ in Publishers.Count(upstream: up, state: self.intState(path)).map { Value.int(Int64($0)) }.eraseToAnyPublisher() }
    }

    func makeMin(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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
    func makeSort(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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
    func ordering(_ stage: StageSyntax, _ argument: ArgumentSyntax?) throws(HubError) -> (Value, Value) throws -> Bool {
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

    func makeOutput(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeIgnoreOutput(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        return { up, _ in up.ignoreOutput().map { never -> Value in }.eraseToAnyPublisher() }
    }

    func makeBuffer(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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
}
