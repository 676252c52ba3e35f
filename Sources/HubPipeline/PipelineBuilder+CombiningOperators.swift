import HubEngine
import HubValue
import HubWire

/// Operators that combine publishers: merge, withLatestFrom, flatMap, switchToLatest,
/// wait, share; and what tells a pipeline argument from a value.
extension PipelineBuilder {
    func makeWithLatestFrom(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let other = try pipeline(arguments[0], of: stage)
        let path = statePath
        return { up, outer throws(HubError) in
            Publishers.WithLatestFrom(
                upstream: up, other: try other(outer), transform: { Value.array([$0, $1]) }, state: self.state(path)
            ).eraseToAnyPublisher()
        }
    }

    func makeShare(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        return { up, _ in up.share().eraseToAnyPublisher() }
    }

    func makeFlatMap(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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

    func makeSwitchToLatest(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let inner = try pipeline(arguments[0], of: stage)
        return { up, _ in
            up.map { value in self.withoutState { Self.built(inner, value) } }.switchToLatest().eraseToAnyPublisher()
        }
    }

    func makeWait(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        _ = arguments.first?.label
        let signal = try pipeline(arguments[0], of: stage)
        return { up, outer throws(HubError) in
            up.wait(untilOutputFrom: Self.signal(try signal(outer))).eraseToAnyPublisher()
        }
    }

    func makeMerge(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
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
}
