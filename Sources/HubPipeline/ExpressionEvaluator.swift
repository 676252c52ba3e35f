import Foundation
import HubEngine
import HubValue

/// Evaluates ``ExpressionSyntax`` over ``Value``s.
///
/// Rules: only `false` and `null` are falsy; a missing field or an
/// out-of-range index gives `null`; `/` gives an integer when exact, else a
/// float; `%` takes integers and truncates toward zero; `+` also joins strings
/// and arrays; type errors, division by zero and integer overflow throw an
/// ``ExpressionEvaluator/Failure`` naming the problem.
public struct ExpressionEvaluator {
    /// Why an evaluation failed (a type error, a division by zero, an overflow).
    public struct Failure: Error, Hashable, Sendable {
        /// What went wrong, e.g. `'*' needs numbers, got string and int`.
        public var message: String
        /// Where in the text the failing expression starts.
        public var position: SourcePosition

        /// A failure with `message` at `position`.
        public init(_ message: String, at position: SourcePosition) {
            self.message = message
            self.position = position
        }
    }

    /// The current value `.`.
    public var current: Value
    /// The `$name` variables (`$acc`) and lambda parameters in scope.
    public var variables: [String: Value]
    /// The clock of `now()`.
    public var now: () -> SchedulerTime
    /// The steps one evaluation may take (shared by nested `map`/`filter` scopes), so that
    /// nested lambdas over large arrays cannot hold the event loop.
    let budget: Budget
    /// Compiled patterns and formatters shared by the evaluations of one stage.
    let cache: EvaluationCache

    /// The most evaluation steps of one expression evaluation.
    public static let maximumSteps = 1_000_000
    /// The longest string `+` and `append` may build (so that `scan("x", $acc + $acc)` cannot exhaust memory).
    public static let maximumStringBytes = 16 << 20
    /// The longest array `+` and `append` may build.
    public static let maximumArrayCount = 1 << 20

    /// A step counter shared by the scopes of one evaluation.
    final class Budget {
        var remaining: Int
        init(_ steps: Int) { remaining = steps }
    }

    /// An evaluator with `.` bound to `current`, allowed `maximumSteps` steps per evaluation.
    public init(
        current: Value = .null, variables: [String: Value] = [:], now: @escaping () -> SchedulerTime = { .zero },
        maximumSteps: Int = ExpressionEvaluator.maximumSteps
    ) {
        self.init(current: current, variables: variables, now: now, maximumSteps: maximumSteps, cache: EvaluationCache())
    }

    /// An evaluator that keeps the patterns and formatters it builds in `cache`.
    init(
        current: Value, variables: [String: Value], now: @escaping () -> SchedulerTime,
        maximumSteps: Int = ExpressionEvaluator.maximumSteps, cache: EvaluationCache
    ) {
        self.current = current
        self.variables = variables
        self.now = now
        self.budget = Budget(maximumSteps)
        self.cache = cache
    }

    /// Evaluates `expression` once with `.` bound to `current` (and `$acc` to `accumulator` if given).
    public static func evaluate(
        _ expression: ExpressionSyntax, current: Value, accumulator: Value? = nil,
        now: @escaping () -> SchedulerTime = { .zero }
    ) throws(Failure) -> Value {
        var variables: [String: Value] = [:]
        if let accumulator { variables["$acc"] = accumulator }
        return try ExpressionEvaluator(current: current, variables: variables, now: now).evaluate(expression)
    }

    /// The name of a value's type in error messages: null, bool, int, float, string, array, object.
    public static func typeName(_ value: Value) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "bool"
        case .int: return "int"
        case .double: return "float"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Whether `value` counts as true: everything but `false` and `null`.
    public static func isTruthy(_ value: Value) -> Bool {
        switch value {
        case .null, .bool(false): return false
        default: return true
        }
    }

    /// Takes `steps` more from this evaluation's budget: work in proportion to the data a
    /// step handles (joining, writing or searching strings and arrays) is counted at one
    /// step per ``bytesPerStep`` bytes of text or ``elementsPerStep`` elements.
    func spend(_ steps: Int, at position: SourcePosition) throws(Failure) {
        budget.remaining -= steps
        if budget.remaining < 0 {
            throw Failure("the expression took too many steps", at: position)
        }
    }

    /// The bytes of text copied, written or searched per evaluation step.
    static let bytesPerStep = 256
    /// The array elements or object members copied or searched per evaluation step.
    static let elementsPerStep = 16

    // MARK: - Evaluation

    /// The value of `expression` in this scope.
    public func evaluate(_ expression: ExpressionSyntax) throws(Failure) -> Value {
        let at = expression.position
        budget.remaining -= 1
        if budget.remaining < 0 {
            throw Failure("the expression took too many steps", at: at)
        }
        switch expression.kind {
        case .current:
            return current
        case let .variable(name):
            guard let value = variables["$" + name] else { throw Failure("unknown variable '$\(name)'", at: at) }
            return value
        case let .name(dotted):
            let parts = dotted.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard var value = variables[parts[0]] else { throw Failure("unknown name '\(parts[0])'", at: at) }
            for part in parts.dropFirst() { value = try Self.field(value, part, at: at) }
            return value
        case let .literal(value):
            return value
        case let .field(base, name):
            return try Self.field(try evaluate(base), name, at: at)
        case let .index(base, indexExpression):
            return try Self.index(try evaluate(base), try evaluate(indexExpression), at: at)
        case let .negate(operand):
            switch try evaluate(operand) {
            case let .int(i):
                let (result, overflow) = Int64(0).subtractingReportingOverflow(i)
                if overflow { throw Failure("integer overflow in unary '-'", at: at) }
                return .int(result)
            case let .double(d):
                return .double(-d)
            case let other:
                throw Failure("unary '-' needs a number, got \(Self.typeName(other))", at: at)
            }
        case let .not(operand):
            return .bool(!Self.isTruthy(try evaluate(operand)))
        case let .binary(.and, left, right):
            guard Self.isTruthy(try evaluate(left)) else { return .bool(false) }
            return .bool(Self.isTruthy(try evaluate(right)))
        case let .binary(.or, left, right):
            if Self.isTruthy(try evaluate(left)) { return .bool(true) }
            return .bool(Self.isTruthy(try evaluate(right)))
        case let .binary(op, left, right):
            let a = try evaluate(left), b = try evaluate(right)
            let result = try Self.apply(op, a, b, at: at)
            try spend(Self.dataSteps(op, a, b), at: at)
            return result
        case let .conditional(condition, then, otherwise):
            return Self.isTruthy(try evaluate(condition)) ? try evaluate(then) : try evaluate(otherwise)
        case let .array(elements):
            var result: [Value] = []
            result.reserveCapacity(elements.count)
            for element in elements { result.append(try evaluate(element)) }
            return .array(result)
        case let .object(members):
            var result = Value.Object()
            for member in members { result[member.key] = try evaluate(member.value) }
            return .object(result)
        case let .call(name, arguments, _):
            return try call(name, arguments, at: at)
        case .pipeline:
            throw Failure("a pipeline is not a value", at: at)
        case .lambda:
            throw Failure("a lambda can only be an argument of map, filter or sort", at: at)
        }
    }

    /// The extra steps of a binary operator over large operands: joining copies both,
    /// comparing for equality may walk both.
    static func dataSteps(_ op: ExpressionSyntax.BinaryOperator, _ a: Value, _ b: Value) -> Int {
        switch (op, a, b) {
        case let (.add, .string(x), .string(y)):
            return (x.utf8.count + y.utf8.count) / bytesPerStep
        case let (.add, .array(x), .array(y)):
            return (x.count + y.count) / elementsPerStep
        case (.equal, .array, _), (.equal, .object, _), (.notEqual, .array, _), (.notEqual, .object, _):
            return a.measure(maxBytes: maximumStringBytes).nodes / elementsPerStep
        case let (.equal, .string(x), _), let (.notEqual, .string(x), _),
             let (.less, .string(x), _), let (.lessOrEqual, .string(x), _),
             let (.greater, .string(x), _), let (.greaterOrEqual, .string(x), _):
            return x.utf8.count / bytesPerStep
        default:
            return 0
        }
    }

    static func field(_ base: Value, _ name: String, at: SourcePosition) throws(Failure) -> Value {
        switch base {
        case let .object(members): return members[name] ?? .null
        case .null: return .null
        default: throw Failure("'.\(name)' needs an object, got \(typeName(base))", at: at)
        }
    }

    static func index(_ base: Value, _ index: Value, at: SourcePosition) throws(Failure) -> Value {
        switch (base, index) {
        case (.null, _):
            return .null
        case let (.array(elements), _):
            guard let i = index.intValue else {
                throw Failure("an array index must be an integer, got \(typeName(index))", at: at)
            }
            return i >= 0 && i < Int64(elements.count) ? elements[Int(i)] : .null
        case let (.object(members), .string(key)):
            return members[key] ?? .null
        case (.object, _):
            throw Failure("an object index must be a string, got \(typeName(index))", at: at)
        default:
            throw Failure("'[]' needs an array or an object, got \(typeName(base))", at: at)
        }
    }

    // MARK: - Operators

    static func apply(_ op: ExpressionSyntax.BinaryOperator, _ a: Value, _ b: Value, at: SourcePosition) throws(Failure) -> Value {
        switch op {
        case .equal: return .bool(a == b)
        case .notEqual: return .bool(a != b)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let order = compare(a, b) else {
                throw Failure("'\(op.rawValue)' needs two numbers or two strings, got \(typeName(a)) and \(typeName(b))", at: at)
            }
            switch op {
            case .less: return .bool(order < 0)
            case .lessOrEqual: return .bool(order <= 0)
            case .greater: return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        case .add:
            switch (a, b) {
            case let (.string(x), .string(y)):
                guard x.utf8.count + y.utf8.count <= maximumStringBytes else {
                    throw Failure("'+' would make a string longer than \(maximumStringBytes) bytes", at: at)
                }
                return .string(x + y)
            case let (.array(x), .array(y)):
                guard x.count + y.count <= maximumArrayCount else {
                    throw Failure("'+' would make an array longer than \(maximumArrayCount) elements", at: at)
                }
                return .array(x + y)
            default: break
            }
            return try arithmetic(op, a, b, at: at, typeHint: "numbers, two strings or two arrays")
        case .subtract, .multiply:
            return try arithmetic(op, a, b, at: at, typeHint: "numbers")
        case .divide:
            switch (a, b) {
            case let (.int(x), .int(y)):
                if y == 0 { throw Failure("division by zero", at: at) }
                let (remainder, _) = x.remainderReportingOverflow(dividingBy: y)
                if remainder == 0 {
                    let (quotient, overflow) = x.dividedReportingOverflow(by: y)
                    if overflow { throw Failure("integer overflow in '/'", at: at) }
                    return .int(quotient)
                }
                return .double(Double(x) / Double(y))
            default:
                guard let x = a.numberAsDouble, let y = b.numberAsDouble else {
                    throw Failure("'/' needs numbers, got \(typeName(a)) and \(typeName(b))", at: at)
                }
                if y == 0 { throw Failure("division by zero", at: at) }
                return try finite(x / y, op, at: at)
            }
        case .remainder:
            guard case let .int(x) = a, case let .int(y) = b else {
                throw Failure("'%' needs integers, got \(typeName(a)) and \(typeName(b))", at: at)
            }
            if y == 0 { throw Failure("division by zero", at: at) }
            let (remainder, overflow) = x.remainderReportingOverflow(dividingBy: y)
            return .int(overflow ? 0 : remainder)
        case .and, .or:
            return .bool(isTruthy(a) && isTruthy(b)) // not reached: short-circuited in evaluate
        }
    }

    private static func arithmetic(
        _ op: ExpressionSyntax.BinaryOperator, _ a: Value, _ b: Value, at: SourcePosition, typeHint: String
    ) throws(Failure) -> Value {
        if case let .int(x) = a, case let .int(y) = b {
            let (result, overflow): (Int64, Bool)
            switch op {
            case .add: (result, overflow) = x.addingReportingOverflow(y)
            case .subtract: (result, overflow) = x.subtractingReportingOverflow(y)
            default: (result, overflow) = x.multipliedReportingOverflow(by: y)
            }
            if overflow { throw Failure("integer overflow in '\(op.rawValue)'", at: at) }
            return .int(result)
        }
        guard let x = a.numberAsDouble, let y = b.numberAsDouble else {
            throw Failure("'\(op.rawValue)' needs \(typeHint), got \(typeName(a)) and \(typeName(b))", at: at)
        }
        switch op {
        case .add: return try finite(x + y, op, at: at)
        case .subtract: return try finite(x - y, op, at: at)
        default: return try finite(x * y, op, at: at)
        }
    }

    private static func finite(_ d: Double, _ op: ExpressionSyntax.BinaryOperator, at: SourcePosition) throws(Failure) -> Value {
        guard d.isFinite else { throw Failure("number overflow in '\(op.rawValue)'", at: at) }
        return .double(d)
    }

    /// -1, 0 or 1 for two numbers or two strings; `nil` for any other pair.
    static func compare(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case let (.int(x), .int(y)):
            return x < y ? -1 : x == y ? 0 : 1
        case let (.string(x), .string(y)):
            return x < y ? -1 : x == y ? 0 : 1
        case let (.int(x), .double(y)):
            return compareIntDouble(x, y)
        case let (.double(x), .int(y)):
            return -compareIntDouble(y, x)
        case let (.double(x), .double(y)):
            return x < y ? -1 : x == y ? 0 : 1
        default:
            return nil
        }
    }

    private static func compareIntDouble(_ x: Int64, _ y: Double) -> Int {
        if y.isNaN { return 1 }
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let floor = y.rounded(.down)
        let whole = Int64(floor)
        if x < whole { return -1 }
        if x > whole { return 1 }
        return floor == y ? 0 : -1
    }
}

extension Value {
    /// The number as a `Double` when this is a number.
    var numberAsDouble: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }
}
