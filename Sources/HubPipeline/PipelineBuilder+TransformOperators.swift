import HubEngine
import HubValue
import HubWire

/// Operators that transform each value: map, filter, compactMap, scan and reduce,
/// removeDuplicates, replaceNil, mapError.
extension PipelineBuilder {
    func makeMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in up.compactMap { value in Self.skipping(skip) { () throws(HubError) in try f(value, nil) } }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryMap { try f($0, nil) }) }
    }

    func makeFilter(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let f = try element(arguments[0], of: stage)
        if let skip = environment.skipFailure {
            return { up, _ in up.filter { Self.truth(skip, f, $0) ?? false }.eraseToAnyPublisher() }
        }
        return { up, _ in Self.typed(up.tryFilter { ExpressionEvaluator.isTruthy(try f($0, nil)) }) }
    }

    func makeCompactMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeScan(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeRemoveDuplicates(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeReplaceNil(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let value = try constant(arguments[0], of: stage)
        return { up, outer throws(HubError) in
            let replacement = try value(outer)
            return up.map { $0.isNull ? replacement : $0 }.eraseToAnyPublisher()
        }
    }

    func makeMapError(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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
}
