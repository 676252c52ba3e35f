import HubEngine
import HubValue
import HubWire

/// Turns a ``PipelineSyntax`` into publishers: resolves sources and operators,
/// checks arguments and expressions, and counts stages against the limits.
///
/// A compiled pipeline is a ``PipelineBuilder/Build``: a function of the outer
/// value `.` that argument expressions see (`null` at the top level; the value
/// being mapped inside `flatMap` and `switchToLatest`).
final class PipelineBuilder {
    typealias Pub = AnyPublisher<Value, HubError>
    /// Builds the publisher for an outer value.
    typealias Build = (Value) throws(HubError) -> Pub
    /// Applies one operator stage to its upstream, for an outer value.
    typealias Operator = (Pub, Value) throws(HubError) -> Pub
    /// An expression evaluated per element (with an optional `$acc`).
    typealias ElementFunction = (Value, Value?) throws(HubError) -> Value

    let environment: any PipelineEnvironment
    let limits: PipelineLimits
    private var stageCount = 0
    /// Where the stage being compiled stands in the text: its state's path in a
    /// checkpoint (see PipelineBuilder+Checkpoint.swift).
    var path: [String] = []

    init(environment: any PipelineEnvironment) {
        self.environment = environment
        self.limits = environment.limits
    }

    static let sources: Set<String> = [
        "just", "sequence", "empty", "fail", "timer", "trigger", "merge", "combineLatest", "zip", "subject",
        "publish", "publishAndRepeat", "accumulateLatest", "reduceLatest",
    ]

    static func error(_ message: String, at position: SourcePosition) -> HubError {
        PipelineLexer.error(message, at: position)
    }

    /// ` (did you mean 'NAME'?)` for the known name closest to `name`, or nothing.
    static func didYouMean(_ name: String, among names: some Sequence<String>) -> String {
        NameSuggestion.closest(to: name, among: names).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// The HubError of an expression failure in `stage`: the stage's text (cut to its first
    /// line and 60 characters, so that a long reducer is not repeated in full), what failed, and
    /// where (`data.line`, `data.column` in the pipeline's text).
    static func failure(_ failure: ExpressionEvaluator.Failure, in stage: StageSyntax) -> HubError {
        let text = abbreviated(stage.text)
        return HubError(
            .failed, "\(text): \(failure.message)",
            data: .object([
                "stage": .string(text), "error": .string(failure.message),
                "line": .int(Int64(failure.position.line)), "column": .int(Int64(failure.position.column)),
            ]))
    }

    /// A stage's text for messages: its first line, at most 60 characters, `…` when cut.
    static func abbreviated(_ text: String) -> String {
        let firstLine = text.prefix { $0 != "\n" }
        let cut = firstLine.count > 60 ? String(firstLine.prefix(59)) : String(firstLine)
        return cut.count < text.count ? cut.trimmingCharacters(in: .whitespaces) + "…" : cut
    }

    static func hubError(_ error: any Error) -> HubError {
        (error as? HubError) ?? HubError(.internal, "\(error)")
    }

    /// Asks the environment whether the pipeline may use `name` for `access` (a name
    /// written in the text, checked before anything runs); a refusal keeps its code
    /// (`forbidden`) and gains the position.
    func authorize(_ access: PipelineAccess, _ name: String, at position: SourcePosition) throws(HubError) {
        do {
            try environment.authorize(access, name: name)
        } catch {
            var refusal = error
            var data = error.data?.objectValue ?? [:]
            data["line"] = .int(Int64(position.line))
            data["column"] = .int(Int64(position.column))
            refusal.data = .object(data)
            refusal.message = "\(position.line):\(position.column): \(error.message)"
            throw refusal
        }
    }

    func countStage(_ stage: StageSyntax) throws(HubError) {
        stageCount += 1
        if stageCount > limits.maxStages {
            throw Self.error("too many stages (the limit is \(limits.maxStages))", at: stage.position)
        }
    }

    // MARK: - Pipelines

    func pipeline(_ syntax: PipelineSyntax) throws(HubError) -> Build {
        let source = try within(Self.pathComponent(0, syntax.stages[0])) { () throws(HubError) in try self.source(syntax.stages[0]) }
        var operators: [Operator] = []
        for (index, stage) in syntax.stages.enumerated().dropFirst() {
            try countStage(stage)
            if Self.sources.contains(stage.name), !Self.operatorsNamedLikeSources.contains(stage.name) {
                throw Self.error("'\(stage.name)' is a source: it can only start a pipeline", at: stage.position)
            }
            if stage.name == "into", index != syntax.stages.count - 1 {
                throw Self.error("into(...) writes the pipeline's values into a subject: it must be the last stage", at: stage.position)
            }
            operators.append(try within(Self.pathComponent(index, stage)) { () throws(HubError) in try self.operator(stage) })
        }
        // Every build (the top level once, a nested pipeline once per value of its flatMap…)
        // is charged to the budget, so that nested builds cannot multiply without bound.
        let budget = environment.budget
        let text = syntax.stages[0].text
        return { outer throws(HubError) in
            try Self.charged(budget, text) { () throws(HubError) -> Pub in
                var publisher = try source(outer)
                for apply in operators { publisher = try apply(publisher, outer) }
                return publisher
            }
        }
    }

    /// A pipeline argument: `a | b`, or a bare name or call standing for one stage, or a
    /// choice `c ? p : q` between two of them (`(a | b)` in parentheses in a branch).
    func pipeline(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> Build {
        let index = stage.arguments?.firstIndex { $0.position == argument.position } ?? 0
        return try within("a\(index)") { () throws(HubError) -> Build in
            switch argument.kind {
            case let .pipeline(p):
                return try pipeline(p)
            case let .expression(e):
                return try pipeline(e, of: stage)
            case .duration:
                throw Self.error("\(stage.name) expects a pipeline here, not a duration", at: argument.position)
            }
        }
    }

    /// The pipeline an expression in a pipeline's place stands for.
    private func pipeline(_ e: ExpressionSyntax, of stage: StageSyntax) throws(HubError) -> Build {
        switch e.kind {
        case let .name(name):
            return try pipeline(PipelineSyntax(
                stages: [StageSyntax(name: name, arguments: nil, position: e.position, text: name)], position: e.position))
        case let .call(name, arguments, text):
            return try pipeline(PipelineSyntax(
                stages: [StageSyntax(name: name, arguments: arguments, position: e.position, text: text)], position: e.position))
        case let .pipeline(p):
            return try pipeline(p)
        case let .conditional(condition, then, otherwise):
            // The seed's `if let next = result.next { ... } else { Just(result) }`: the
            // condition is evaluated with `.` the outer value, when the pipeline is built.
            try validate(condition, variables: [], names: [])
            let test = try element(
                ArgumentSyntax(label: nil, kind: .expression(condition), position: condition.position), of: stage)
            let first = try within("t") { () throws(HubError) in try pipeline(then, of: stage) }
            let second = try within("f") { () throws(HubError) in try pipeline(otherwise, of: stage) }
            return { outer throws(HubError) in
                ExpressionEvaluator.isTruthy(try test(outer, nil)) ? try first(outer) : try second(outer)
            }
        default:
            throw Self.error("\(stage.name) expects a pipeline here", at: e.position)
        }
    }

    /// Every argument of `stage` as a pipeline.
    func pipelines(_ stage: StageSyntax, atLeast minimum: Int) throws(HubError) -> [Build] {
        let arguments = stage.arguments ?? []
        guard arguments.count >= minimum else {
            throw Self.error("\(stage.name) needs at least \(minimum) pipeline\(minimum == 1 ? "" : "s")", at: stage.position)
        }
        try noLabels(stage)
        var builds: [Build] = []
        for argument in arguments { builds.append(try pipeline(argument, of: stage)) }
        return builds
    }

    static func buildAll(_ builds: [Build], _ outer: Value) throws(HubError) -> [Pub] {
        var result: [Pub] = []
        for build in builds { result.append(try build(outer)) }
        return result
    }

    // MARK: - Arguments

    func arguments(_ stage: StageSyntax, _ range: ClosedRange<Int>) throws(HubError) -> [ArgumentSyntax] {
        let arguments = stage.arguments ?? []
        guard range.contains(arguments.count) else {
            let expected: String
            if range.lowerBound == range.upperBound {
                expected = "\(range.lowerBound) argument\(range.lowerBound == 1 ? "" : "s")"
            } else {
                expected = "\(range.lowerBound) to \(range.upperBound) arguments"
            }
            throw Self.error("\(stage.name) takes \(expected), got \(arguments.count)", at: stage.position)
        }
        return arguments
    }

    func noLabels(_ stage: StageSyntax) throws(HubError) {
        for argument in stage.arguments ?? [] {
            if let label = argument.label {
                throw Self.error("\(stage.name) has no argument '\(label)'", at: argument.position)
            }
        }
    }

    /// The expression of `argument`, validated (`variables` names the `$variables` it may use).
    func expression(_ argument: ArgumentSyntax, of stage: StageSyntax, variables: Set<String> = []) throws(HubError) -> ExpressionSyntax {
        switch argument.kind {
        case let .expression(e):
            try validate(e, variables: variables, names: [])
            return e
        case .pipeline:
            throw Self.error("\(stage.name) expects an expression here, not a pipeline", at: argument.position)
        case .duration:
            throw Self.error("\(stage.name) expects an expression here, not a duration", at: argument.position)
        }
    }

    /// Checks names, variables and function calls of an expression.
    func validate(_ e: ExpressionSyntax, variables: Set<String>, names: Set<String>) throws(HubError) {
        switch e.kind {
        case .current, .literal:
            return
        case let .variable(name):
            if variables.contains(name) { return }
            if name == "acc" { throw Self.error("'$acc' is only available in scan and reduce", at: e.position) }
            if name == "prev" { throw Self.error("'$prev' is only available in removeDuplicates(by:)", at: e.position) }
            if name == "a" || name == "b" { throw Self.error("'$\(name)' is only available in min(by:) and max(by:)", at: e.position) }
            throw Self.error("unknown variable '$\(name)'", at: e.position)
        case let .name(dotted):
            let base = String(dotted.split(separator: ".", maxSplits: 1)[0])
            guard names.contains(base) else {
                throw Self.error("unknown name '\(base)' (fields are written '.\(base)')", at: e.position)
            }
        case let .field(base, _):
            try validate(base, variables: variables, names: names)
        case let .index(base, index):
            try validate(base, variables: variables, names: names)
            try validate(index, variables: variables, names: names)
        case let .negate(x), let .not(x):
            try validate(x, variables: variables, names: names)
        case let .binary(_, l, r):
            try validate(l, variables: variables, names: names)
            try validate(r, variables: variables, names: names)
        case let .conditional(c, a, b):
            try validate(c, variables: variables, names: names)
            try validate(a, variables: variables, names: names)
            try validate(b, variables: variables, names: names)
        case let .array(elements):
            for x in elements { try validate(x, variables: variables, names: names) }
        case let .object(members):
            for m in members { try validate(m.value, variables: variables, names: names) }
        case let .call(name, arguments, _):
            guard let range = ExpressionFunctions.arity[name] else {
                if Self.sources.contains(name) || Self.operatorNames.contains(name) {
                    throw Self.error("'\(name)' is a stage, not a function of expressions", at: e.position)
                }
                throw Self.error(
                    "unknown function '\(name)'\(Self.didYouMean(name, among: ExpressionFunctions.arity.keys))", at: e.position)
            }
            guard range.contains(arguments.count) else {
                throw Self.error(
                    "\(name) takes \(ExpressionEvaluator.describe(range)) argument\(range == 1...1 ? "" : "s"), got \(arguments.count)",
                    at: e.position)
            }
            for (i, argument) in arguments.enumerated() {
                if let label = argument.label {
                    throw Self.error("\(name) has no argument '\(label)'", at: argument.position)
                }
                guard case let .expression(x) = argument.kind else {
                    throw Self.error("\(name) takes expressions as arguments", at: argument.position)
                }
                if case let .lambda(parameter, body) = x.kind {
                    guard i == 1, ExpressionFunctions.takesLambda.contains(name) else {
                        throw Self.error("a lambda can only be the second argument of map, filter or sort", at: x.position)
                    }
                    try validate(body, variables: variables, names: names.union([parameter]))
                } else {
                    try validate(x, variables: variables, names: names)
                }
                // A constant pattern is checked now, not at the first value.
                if i == 1, ExpressionFunctions.regexFunctions.contains(name), case let .literal(.string(pattern)) = x.kind {
                    do throws(LinearRegex.SyntaxError) {
                        _ = try LinearRegex(pattern)
                    } catch {
                        throw Self.error(
                            "\(name): invalid pattern: \(error.message) (at character \(error.offset + 1) of the pattern)", at: x.position)
                    }
                }
            }
        case .lambda:
            throw Self.error("a lambda can only be the second argument of map, filter or sort", at: e.position)
        case .pipeline:
            throw Self.error("a pipeline in parentheses is only valid where a pipeline is expected", at: e.position)
        }
    }

    /// An expression evaluated per element, failing with `failed` naming `stage`; the second
    /// value of the function is bound to `$variable` (`$acc` in scan and reduce).
    func element(_ argument: ArgumentSyntax, of stage: StageSyntax, variable: String? = nil) throws(HubError) -> ElementFunction {
        let e = try expression(argument, of: stage, variables: variable.map { [$0] } ?? [])
        let key = "$" + (variable ?? "acc")
        let evaluate = evaluation(e, of: stage)
        return { value, second throws(HubError) in
            var variables: [String: Value] = [:]
            if let second { variables[key] = second }
            return try evaluate(value, variables)
        }
    }

    /// An expression evaluated when the pipeline is built, with `.` the outer value.
    func constant(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> (Value) throws(HubError) -> Value {
        let f = try element(argument, of: stage)
        return { outer throws(HubError) in try f(outer, nil) }
    }

    /// A constant that must be a non-negative integer.
    func count(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> (Value) throws(HubError) -> Int {
        let f = try constant(argument, of: stage)
        return { outer throws(HubError) in
            let value = try f(outer)
            guard let n = value.intValue, n >= 0, n <= Int64(Int32.max) else {
                throw Self.error(
                    "\(stage.name) needs a non-negative integer, got \(value.jsonString())", at: argument.position)
            }
            return Int(n)
        }
    }

    /// A duration argument (timing operators check the minimum interval).
    func duration(_ argument: ArgumentSyntax, of stage: StageSyntax, checkMinimum: Bool = true) throws(HubError) -> Duration {
        guard case let .duration(d) = argument.kind else {
            throw Self.error("\(stage.name) expects a duration such as 250ms", at: argument.position)
        }
        if checkMinimum, d < limits.minimumInterval {
            throw Self.error(
                "\(stage.name): the interval \(Self.format(d)) is shorter than the minimum of \(Self.format(limits.minimumInterval))",
                at: argument.position)
        }
        return d
    }

    static func format(_ d: Duration) -> String {
        let ns = d.nanosecondsClamped
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000)s" }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        if ns % 1000 == 0 { return "\(ns / 1000)us" }
        return "\(ns)ns"
    }

    /// A bare word argument such as `latest`, or `nil` when the argument is not a bare name.
    static func word(_ argument: ArgumentSyntax) -> String? {
        if case let .expression(e) = argument.kind, case let .name(n) = e.kind { return n }
        return nil
    }

    /// A name argument: a bare word is the name itself, else a string expression.
    func name(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> (Value) throws(HubError) -> String {
        if let word = Self.word(argument) { return { _ throws(HubError) in word } }
        let f = try constant(argument, of: stage)
        return { outer throws(HubError) in
            let value = try f(outer)
            guard case let .string(s) = value else {
                throw Self.error("\(stage.name) needs a name (a string), got \(value.jsonString())", at: argument.position)
            }
            return s
        }
    }
}
