import HubEngine
import HubValue
import HubWire

/// Keyed state, windows and joins: `groupBy`, `tumbling`, `hopping`, `session`, `join`,
/// `lookup` (see ``KeyedGroups``, ``TimeWindows`` and ``KeyedJoin``).
extension PipelineBuilder {
    /// The default bound on a `groupBy`'s live groups and a window stage's open windows.
    static let defaultMaxKeys = 10_000
    /// The largest bound a pipeline may ask for.
    static let maximumMaxKeys = 1_000_000
    /// The most outputs a keyed or windowed stage keeps waiting for demand.
    static let keyedBufferLimit = 10_000

    /// A pipeline argument made of operators only (`scan(0, $acc + .qty)`, `filter(.ok) |
    /// count`): applied to an upstream per group.
    func operators(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> Operator {
        let refusal = Self.error(
            "\(stage.name)'s pipeline is made of operators, such as scan(0, $acc + .qty) or filter(.ok) | count",
            at: argument.position)
        let stages: [StageSyntax]
        switch argument.kind {
        case let .pipeline(p):
            stages = p.stages
        case let .expression(e):
            switch e.kind {
            case let .name(name): stages = [StageSyntax(name: name, arguments: nil, position: e.position, text: name)]
            case let .call(name, arguments, text): stages = [StageSyntax(name: name, arguments: arguments, position: e.position, text: text)]
            case let .pipeline(p): stages = p.stages
            default: throw refusal
            }
        case .duration:
            throw refusal
        }
        let index = stage.arguments?.firstIndex { $0.position == argument.position } ?? 0
        let operators = try within("a\(index)") { () throws(HubError) -> [Operator] in
            var operators: [Operator] = []
            for (number, inner) in stages.enumerated() {
                try countStage(inner)
                guard Self.operators[inner.name] != nil else {
                    throw Self.error(
                        "'\(inner.name)' is not an operator: \(stage.name)'s pipeline is made of operators", at: inner.position)
                }
                operators.append(try within(Self.pathComponent(number, inner)) { () throws(HubError) in try self.operator(inner) })
            }
            return operators
        }
        return Self.chain(operators)
    }

    /// The operators applied one after the other.
    private static func chain(_ operators: [Operator]) -> Operator {
        { up, outer throws(HubError) in
            var publisher = up
            for apply in operators { publisher = try apply(publisher, outer) }
            return publisher
        }
    }

    /// The unlabelled arguments of `stage` and its labelled ones by label, checking the
    /// labels are among `labels`.
    private func split(_ stage: StageSyntax, _ arguments: [ArgumentSyntax], labels: Set<String>) throws(HubError)
        -> (positional: [ArgumentSyntax], labelled: [String: ArgumentSyntax])
    {
        var positional: [ArgumentSyntax] = []
        var labelled: [String: ArgumentSyntax] = [:]
        for argument in arguments {
            guard let label = argument.label else {
                guard labelled.isEmpty else {
                    throw Self.error("\(stage.name): labelled arguments come after the others", at: argument.position)
                }
                positional.append(argument)
                continue
            }
            guard labels.contains(label) else {
                throw Self.error(
                    "\(stage.name) has no argument '\(label)' (it takes \(labels.sorted().map { "\($0):" }.joined(separator: ", ")))",
                    at: argument.position)
            }
            guard labelled[label] == nil else { throw Self.error("\(stage.name) has '\(label)' twice", at: argument.position) }
            labelled[label] = argument
        }
        return (positional, labelled)
    }

    /// A bound of live keys or windows (`maxKeys:`, `maxWindows:`), at most ``maximumMaxKeys``.
    private func bound(_ argument: ArgumentSyntax?, of stage: StageSyntax) throws(HubError) -> (Value) throws(HubError) -> Int {
        guard let argument else { return { _ throws(HubError) in Self.defaultMaxKeys } }
        let n = try count(argument, of: stage)
        return { outer throws(HubError) in
            let value = try n(outer)
            guard (1...Self.maximumMaxKeys).contains(value) else {
                throw Self.error("\(stage.name): \(argument.label ?? "the bound") must be between 1 and \(Self.maximumMaxKeys)", at: argument.position)
            }
            return value
        }
    }

    /// An expression of the value, as a function.
    private func valueFunction(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> (Value) throws(HubError) -> Value {
        let f = try element(argument, of: stage)
        return { value throws(HubError) in try f(value, nil) }
    }

    /// `groupBy(key, pipeline, maxKeys: n, idle: d)`: see ``KeyedGroups``.
    func makeGroupBy(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let (positional, labelled) = try split(stage, arguments, labels: ["maxKeys", "idle"])
        guard positional.count == 2 else {
            throw Self.error("groupBy takes a key and a pipeline: groupBy(.symbol, scan(0, $acc + .qty))", at: stage.position)
        }
        let key = try valueFunction(positional[0], of: stage)
        let chain = try operators(positional[1], of: stage)
        let maxKeys = try bound(labelled["maxKeys"], of: stage)
        let idle = try labelled["idle"].map { argument throws(HubError) in try duration(argument, of: stage) }
        let scheduler = environment.scheduler
        let budget = environment.budget
        let text = stage.text
        let path = statePath
        return { up, outer throws(HubError) in
            let bound = try maxKeys(outer)
            let group: (Pub) -> Pub = { input in
                // Each group is a pipeline built: charged to the budget like flatMap's.
                do throws(HubError) {
                    return try Self.charged(budget, text) { () throws(HubError) -> Pub in try chain(input, outer) }
                } catch {
                    return Fail(error: error).eraseToAnyPublisher()
                }
            }
            return KeyedGroups(
                upstream: up, key: key, group: group, maxKeys: bound, idle: idle, scheduler: scheduler,
                bufferLimit: Self.keyedBufferLimit, state: self.slot(path)
            ).eraseToAnyPublisher()
        }
    }

    /// `tumbling(size, aggregate, …)`, `hopping(size, advance, aggregate, …)`,
    /// `session(gap, aggregate, …)`: see ``TimeWindows``.
    func makeWindow(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let (positional, labelled) = try split(stage, arguments, labels: ["key", "time", "lateness", "early", "maxWindows"])
        let durations = stage.name == "hopping" ? 2 : 1
        guard positional.count == durations + 1 else {
            let form = stage.name == "hopping" ? "hopping(1m, 10s, count())" : "\(stage.name)(1m, count())"
            throw Self.error("\(stage.name) takes \(durations == 2 ? "a size, an advance" : stage.name == "session" ? "a gap" : "a size") and an aggregate: \(form)", at: stage.position)
        }
        var spans: [Int64] = []
        for argument in positional.prefix(durations) {
            let d = try duration(argument, of: stage)
            let ms = d.nanosecondsClamped / 1_000_000
            guard ms >= 1, d.nanosecondsClamped % 1_000_000 == 0 else {
                throw Self.error("\(stage.name): window durations are whole milliseconds, at least 1ms", at: argument.position)
            }
            spans.append(ms)
        }
        let shape: TimeWindows.Shape
        switch stage.name {
        case "hopping":
            guard spans[1] <= spans[0] else {
                throw Self.error("hopping: the advance must not exceed the size", at: positional[1].position)
            }
            guard spans[0] / spans[1] <= 1000 else {
                throw Self.error("hopping: at most 1000 windows overlap (size ÷ advance)", at: positional[1].position)
            }
            shape = .hopping(size: spans[0], advance: spans[1])
        case "session": shape = .session(gap: spans[0])
        default: shape = .tumbling(size: spans[0])
        }
        let aggregate = try self.aggregate(positional[durations], of: stage)
        let key = try labelled["key"].map { argument throws(HubError) in try valueFunction(argument, of: stage) }
        let time = try labelled["time"].map { argument throws(HubError) in try valueFunction(argument, of: stage) }
        let lateness = try labelled["lateness"].map { argument throws(HubError) in try duration(argument, of: stage, checkMinimum: false) }
        if let lateness, time == nil {
            _ = lateness
            throw Self.error("\(stage.name): lateness applies to event time (time: .ts)", at: labelled["lateness"]!.position)
        }
        let early = try labelled["early"].map { argument throws(HubError) in try duration(argument, of: stage) }
        let maxWindows = try bound(labelled["maxWindows"], of: stage)
        let scheduler = environment.scheduler
        let wallClock = environment.wallClock
        let path = statePath
        return { up, outer throws(HubError) in
            TimeWindows(
                upstream: up, shape: shape, aggregate: aggregate, key: key, time: time,
                lateness: (lateness?.nanosecondsClamped ?? 0) / 1_000_000, early: early, maxWindows: try maxWindows(outer),
                scheduler: scheduler, wallClock: wallClock, bufferLimit: Self.keyedBufferLimit, state: self.slot(path)
            ).eraseToAnyPublisher()
        }
    }

    /// A window's aggregate: `count()`, `sum(e)`, `avg(e)`, `min(e)`, `max(e)`, `collect(e)`,
    /// `collect()`, or an object of them.
    private func aggregate(_ argument: ArgumentSyntax, of stage: StageSyntax) throws(HubError) -> WindowAggregate {
        guard case let .expression(e) = argument.kind else {
            throw Self.error("\(stage.name)'s aggregate is count(), sum(e), avg(e), min(e), max(e), collect(e) or an object of them", at: argument.position)
        }
        return try aggregate(e, of: stage)
    }

    private func aggregate(_ e: ExpressionSyntax, of stage: StageSyntax) throws(HubError) -> WindowAggregate {
        let refusal = Self.error(
            "\(stage.name)'s aggregate is count(), sum(e), avg(e), min(e), max(e), collect(e) or an object of them, such as {n: count(), total: sum(.qty)}",
            at: e.position)
        switch e.kind {
        case .name("count"):
            return .count
        case let .call(name, arguments, _):
            if name == "count" {
                guard arguments.isEmpty else { throw Self.error("count() takes no argument", at: e.position) }
                return .count
            }
            if name == "collect", arguments.isEmpty { return .collect { $0 } }
            guard ["sum", "avg", "min", "max", "collect"].contains(name) else { throw refusal }
            guard arguments.count == 1, arguments[0].label == nil else {
                throw Self.error("\(name)(e) takes one expression of the value", at: e.position)
            }
            let f = try valueFunction(arguments[0], of: stage)
            switch name {
            case "sum": return .sum(f)
            case "avg": return .average(f)
            case "min": return .minimum(f)
            case "max": return .maximum(f)
            default: return .collect(f)
            }
        case let .object(members):
            var aggregates: [(String, WindowAggregate)] = []
            for member in members { aggregates.append((member.key, try aggregate(member.value, of: stage))) }
            return .object(aggregates)
        default:
            throw refusal
        }
    }

    /// `join(other, on: key, within: d, otherOn: key, time: e, maxValues: n)` and
    /// `lookup(other, on: key, otherOn: key, value: e, maxValues: n)`: see ``KeyedJoin``.
    func makeJoin(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let isJoin = stage.name == "join"
        let labels: Set<String> = isJoin ? ["on", "otherOn", "within", "time", "maxValues"] : ["on", "otherOn", "value", "maxValues"]
        let (positional, labelled) = try split(stage, arguments, labels: labels)
        let form = isJoin ? "join(payments, on: .orderId, within: 10s)" : "lookup(prices, on: .symbol)"
        guard positional.count == 1, let on = labelled["on"] else {
            throw Self.error("\(stage.name) takes the other pipeline and the key: \(form)", at: stage.position)
        }
        let other = try pipeline(positional[0], of: stage)
        let leftKey = try valueFunction(on, of: stage)
        let rightKey = try labelled["otherOn"].map { argument throws(HubError) in try valueFunction(argument, of: stage) } ?? leftKey
        let kind: KeyedJoin.Kind
        if isJoin {
            guard let withinArgument = labelled["within"] else {
                throw Self.error("join needs 'within:', how far apart in time two values may be: \(form)", at: stage.position)
            }
            let within = try duration(withinArgument, of: stage, checkMinimum: false)
            kind = .window(within: within.nanosecondsClamped / 1_000_000)
        } else {
            kind = .table
        }
        let time = try labelled["time"].map { argument throws(HubError) in try valueFunction(argument, of: stage) }
        let tableValue = try labelled["value"].map { argument throws(HubError) in try valueFunction(argument, of: stage) }
        let maxValues = try bound(labelled["maxValues"], of: stage)
        let wallClock = environment.wallClock
        let path = statePath
        return { up, outer throws(HubError) in
            KeyedJoin(
                left: up, right: try other(outer), kind: kind, leftKey: leftKey, rightKey: rightKey, tableValue: tableValue,
                time: time, maxValues: try maxValues(outer), wallClock: wallClock, bufferLimit: Self.keyedBufferLimit,
                state: self.slot(path)
            ).eraseToAnyPublisher()
        }
    }
}
