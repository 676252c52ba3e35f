import HubEngine
import HubValue
import HubWire

extension PipelineBuilder {
    /// Sources that are also operators (`a | merge(b)`).
    static let operatorsNamedLikeSources: Set<String> = ["merge", "combineLatest", "zip", "reduceLatest", "accumulateLatest"]

    /// `tryX` operators fail with `any Error`; the pipeline's failure is ``HubError``.
    static func typed<P: Publisher>(_ p: P) -> Pub where P.Output == Value {
        p.mapError { hubError($0) }.eraseToAnyPublisher()
    }

    /// The label of a single-argument stage (`first(where: ...)`), checking it is one of `allowed`.
    func singleLabel(_ stage: StageSyntax, _ allowed: Set<String?>) throws(HubError) -> String? {
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
}

