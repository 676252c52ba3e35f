import HubEngine
import HubValue
import HubWire

/// What a window computes over its values: `count()`, `sum(e)`, `avg(e)`, `min(e)`,
/// `max(e)`, `collect(e)` (`collect()`: the values themselves), or an object of them
/// (`{n: count(), total: sum(.qty)}`). Each `e` is evaluated per value.
indirect enum WindowAggregate {
    case count
    case sum((Value) throws(HubError) -> Value)
    case average((Value) throws(HubError) -> Value)
    case minimum((Value) throws(HubError) -> Value)
    case maximum((Value) throws(HubError) -> Value)
    case collect((Value) throws(HubError) -> Value)
    case object([(String, WindowAggregate)])

    /// The accumulator of an empty window.
    var empty: Accumulator {
        switch self {
        case .count: return .count(0)
        case .sum: return .sum(.int(0))
        case .average: return .average(sum: 0, count: 0)
        case .minimum, .maximum: return .extreme(nil)
        case .collect: return .collect([])
        case let .object(members): return .object(members.map(\.1.empty))
        }
    }

    /// One window's state so far.
    enum Accumulator: Equatable {
        case count(Int64)
        case sum(Value)
        case average(sum: Double, count: Int64)
        case extreme(Value?)
        case collect([Value])
        case object([Accumulator])
    }

    /// `accumulator` with `value` folded in.
    func add(_ value: Value, to accumulator: inout Accumulator) throws(HubError) {
        switch (self, accumulator) {
        case let (.count, .count(n)):
            accumulator = .count(n &+ 1)
        case let (.sum(f), .sum(total)):
            accumulator = .sum(try Self.plus(total, try f(value)))
        case let (.average(f), .average(sum, count)):
            let x = try f(value)
            guard let d = x.numberAsDouble else { throw Self.notANumber("avg", x) }
            accumulator = .average(sum: sum + d, count: count + 1)
        case let (.minimum(f), .extreme(current)), let (.maximum(f), .extreme(current)):
            let x = try f(value)
            guard let current else {
                accumulator = .extreme(x)
                return
            }
            guard let order = ExpressionEvaluator.compare(x, current) else {
                throw HubError(.failed, "window: cannot compare \(ExpressionEvaluator.typeName(x)) and \(ExpressionEvaluator.typeName(current))")
            }
            if case .minimum = self, order < 0 { accumulator = .extreme(x) }
            if case .maximum = self, order > 0 { accumulator = .extreme(x) }
        case let (.collect(f), .collect(values)):
            var values = values
            accumulator = .collect([])
            values.append(try f(value))
            accumulator = .collect(values)
        case let (.object(members), .object(accumulators)):
            var updated = accumulators
            for (index, member) in members.enumerated() { try member.1.add(value, to: &updated[index]) }
            accumulator = .object(updated)
        default:
            break
        }
    }

    /// The window's result.
    func result(_ accumulator: Accumulator) -> Value {
        switch (self, accumulator) {
        case let (_, .count(n)): return .int(n)
        case let (_, .sum(total)): return total
        case let (_, .average(sum, count)): return count == 0 ? .null : .double(sum / Double(count))
        case let (_, .extreme(value)): return value ?? .null
        case let (_, .collect(values)): return .array(values)
        case let (.object(members), .object(accumulators)):
            var result = Value.Object()
            for (index, member) in members.enumerated() { result[member.0] = member.1.result(accumulators[index]) }
            return .object(result)
        default: return .null
        }
    }

    /// The accumulator as a checkpoint keeps it.
    func encode(_ accumulator: Accumulator) -> Value {
        switch accumulator {
        case let .count(n): return .int(n)
        case let .sum(total): return total
        case let .average(sum, count): return [.double(sum), .int(count)]
        case let .extreme(value): return value.map { ["some": $0] } ?? [:]
        case let .collect(values): return .array(values)
        case let .object(accumulators):
            guard case let .object(members) = self else { return .null }
            return .array(zip(members, accumulators).map { $0.1.encode($1) })
        }
    }

    /// An accumulator read back from a checkpoint.
    func decode(_ value: Value) throws(CheckpointError) -> Accumulator {
        func malformed() -> CheckpointError { CheckpointError(.malformed, "a window's accumulator does not fit its aggregate") }
        switch self {
        case .count:
            guard let n = value.intValue else { throw malformed() }
            return .count(n)
        case .sum:
            guard value.numberAsDouble != nil else { throw malformed() }
            return .sum(value)
        case .average:
            guard case let .array(pair) = value, pair.count == 2, let sum = pair[0].numberAsDouble, let count = pair[1].intValue
            else { throw malformed() }
            return .average(sum: sum, count: count)
        case .minimum, .maximum:
            guard case let .object(members) = value else { throw malformed() }
            return .extreme(members["some"])
        case .collect:
            guard case let .array(values) = value else { throw malformed() }
            return .collect(values)
        case let .object(members):
            guard case let .array(items) = value, items.count == members.count else { throw malformed() }
            var accumulators: [Accumulator] = []
            for (member, item) in zip(members, items) { accumulators.append(try member.1.decode(item)) }
            return .object(accumulators)
        }
    }

    /// `other` folded into `accumulator` (two session windows that a value joined).
    func merge(_ other: Accumulator, into accumulator: inout Accumulator) {
        switch (self, accumulator, other) {
        case let (.count, .count(a), .count(b)):
            accumulator = .count(a &+ b)
        case let (.sum, .sum(a), .sum(b)):
            accumulator = .sum((try? Self.plus(a, b)) ?? a)
        case let (.average, .average(sumA, countA), .average(sumB, countB)):
            accumulator = .average(sum: sumA + sumB, count: countA + countB)
        case let (.minimum, .extreme(a), .extreme(b)), let (.maximum, .extreme(a), .extreme(b)):
            guard let b else { return }
            guard let a, let order = ExpressionEvaluator.compare(b, a) else {
                accumulator = .extreme(accumulator == .extreme(nil) ? b : a)
                return
            }
            if case .minimum = self, order < 0 { accumulator = .extreme(b) }
            if case .maximum = self, order > 0 { accumulator = .extreme(b) }
        case let (.collect, .collect(a), .collect(b)):
            accumulator = .collect(a + b)
        case let (.object(members), .object(a), .object(b)):
            var merged = a
            for index in members.indices where index < b.count { members[index].1.merge(b[index], into: &merged[index]) }
            accumulator = .object(merged)
        default:
            break
        }
    }

    private static func plus(_ a: Value, _ b: Value) throws(HubError) -> Value {
        if case let .int(x) = a, case let .int(y) = b {
            let (sum, overflow) = x.addingReportingOverflow(y)
            if !overflow { return .int(sum) }
        }
        guard let x = a.numberAsDouble, let y = b.numberAsDouble else { throw notANumber("sum", a.numberAsDouble == nil ? a : b) }
        return .double(x + y)
    }

    private static func notANumber(_ function: String, _ value: Value) -> HubError {
        HubError(.failed, "window: \(function) needs numbers, got \(ExpressionEvaluator.typeName(value))")
    }
}
