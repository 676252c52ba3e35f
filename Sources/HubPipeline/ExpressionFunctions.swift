import Foundation
import HubValue

/// The functions of the expression language (`length(.items)`, `upper(.name)`, ...).
///
/// `map(array, f)` and `filter(array, f)` take either a lambda `x -> x * 2` (the
/// parameter names each element) or a plain expression in which `.` is rebound
/// to each element: `map(.items, . * 2)`.
enum ExpressionFunctions {
    /// Every function with its least and greatest argument count.
    static let arity: [String: ClosedRange<Int>] = coreArity.merging(textArity) { core, _ in core }

    /// The functions of this file with their argument counts.
    static let coreArity: [String: ClosedRange<Int>] = [
        "length": 1...1, "abs": 1...1, "round": 1...1, "floor": 1...1, "ceil": 1...1,
        "min": 1...64, "max": 1...64, "lower": 1...1, "upper": 1...1, "trim": 1...1,
        "contains": 2...2, "startsWith": 2...2, "endsWith": 2...2, "split": 2...2, "join": 2...2,
        "string": 1...1, "number": 1...1, "now": 0...0, "keys": 1...1, "values": 1...1,
        "merge": 1...64, "set": 3...3, "append": 2...64, "map": 2...2, "filter": 2...2,
        "type": 1...1, "coalesce": 1...64, "if": 3...3, "slice": 2...3, "sum": 1...1,
    ]

    /// Functions whose second argument may be a lambda.
    static let takesLambda: Set<String> = ["map", "filter", "sort"]
}

extension ExpressionEvaluator {
    func call(_ name: String, _ arguments: [ArgumentSyntax], at: SourcePosition) throws(Failure) -> Value {
        guard let range = ExpressionFunctions.arity[name] else { throw Failure("unknown function '\(name)'", at: at) }
        guard range.contains(arguments.count) else {
            throw Failure("\(name) takes \(Self.describe(range)) arguments, got \(arguments.count)", at: at)
        }
        var expressions: [ExpressionSyntax] = []
        for argument in arguments {
            guard argument.label == nil, case let .expression(e) = argument.kind else {
                throw Failure("\(name) takes expressions as arguments", at: argument.position)
            }
            expressions.append(e)
        }
        if name == "map" || name == "filter" {
            return try mapOrFilter(name, expressions[0], expressions[1], at: at)
        }
        if name == "sort" {
            return try sort(expressions[0], key: expressions.count > 1 ? expressions[1] : nil, at: at)
        }
        if name == "if" {
            return Self.isTruthy(try evaluate(expressions[0])) ? try evaluate(expressions[1]) : try evaluate(expressions[2])
        }
        if name == "coalesce" {
            for e in expressions {
                let v = try evaluate(e)
                if !v.isNull { return v }
            }
            return .null
        }
        var args: [Value] = []
        for e in expressions { args.append(try evaluate(e)) }
        try spend(Self.dataSteps(of: name, args), at: at)
        return try apply(name, args, at: at)
    }

    static func describe(_ range: ClosedRange<Int>) -> String {
        if range.lowerBound == range.upperBound { return "\(range.lowerBound)" }
        if range.upperBound >= 64 { return "at least \(range.lowerBound)" }
        return "\(range.lowerBound) to \(range.upperBound)"
    }

    /// The steps a function call takes beyond its own: in proportion to the strings it
    /// reads or writes and the arrays and objects it copies or searches.
    static func dataSteps(of name: String, _ args: [Value]) -> Int {
        var bytes = 0, elements = 0
        for arg in args {
            switch arg {
            case let .string(s): bytes += s.utf8.count
            case let .array(a): elements += a.count
            case let .object(o): elements += o.count
            default: break
            }
        }
        if name == "string", let first = args.first {
            switch first {
            case .array, .object: bytes += first.measure(maxBytes: maximumStringBytes).bytes
            default: break
            }
        }
        return bytes / bytesPerStep + elements / elementsPerStep
    }

    private func mapOrFilter(_ name: String, _ source: ExpressionSyntax, _ body: ExpressionSyntax, at: SourcePosition) throws(Failure) -> Value {
        guard case let .array(elements) = try evaluate(source) else {
            throw Failure("\(name) needs an array as its first argument", at: at)
        }
        var result: [Value] = []
        for element in elements {
            var scope = self
            let expression: ExpressionSyntax
            if case let .lambda(parameter, lambdaBody) = body.kind {
                scope.variables[parameter] = element
                expression = lambdaBody
            } else {
                scope.current = element
                expression = body
            }
            let value = try scope.evaluate(expression)
            if name == "map" {
                result.append(value)
            } else if Self.isTruthy(value) {
                result.append(element)
            }
        }
        return .array(result)
    }

    private func typeError(_ name: String, _ expected: String, _ args: [Value], at: SourcePosition) -> Failure {
        Failure("\(name) needs \(expected), got \(args.map(Self.typeName).joined(separator: " and "))", at: at)
    }

    private func apply(_ name: String, _ args: [Value], at: SourcePosition) throws(Failure) -> Value {
        let a = args.first ?? .null
        switch name {
        case "length":
            switch a {
            case let .string(s): return .int(Int64(s.count))
            case let .array(x): return .int(Int64(x.count))
            case let .object(o): return .int(Int64(o.count))
            default: throw typeError(name, "a string, an array or an object", args, at: at)
            }
        case "abs":
            switch a {
            case let .int(i):
                guard i != .min else { throw Failure("integer overflow in abs", at: at) }
                return .int(Swift.abs(i))
            case let .double(d): return .double(Swift.abs(d))
            default: throw typeError(name, "a number", args, at: at)
            }
        case "round", "floor", "ceil":
            switch a {
            case .int: return a
            case let .double(d):
                let rule: FloatingPointRoundingRule = name == "round" ? .toNearestOrAwayFromZero : name == "floor" ? .down : .up
                let r = d.rounded(rule)
                if let exact = Int64(exactly: r) { return .int(exact) }
                return .double(r)
            default: throw typeError(name, "a number", args, at: at)
            }
        case "min", "max":
            var items = args
            if args.count == 1 {
                guard case let .array(elements) = a else { throw typeError(name, "an array or several values", args, at: at) }
                items = elements
            }
            guard var best = items.first else { return .null }
            for item in items.dropFirst() {
                guard let order = Self.compare(item, best) else {
                    throw Failure("\(name) needs numbers or strings, got \(Self.typeName(best)) and \(Self.typeName(item))", at: at)
                }
                if name == "min" ? order < 0 : order > 0 { best = item }
            }
            if items.count == 1, Self.compare(best, best) == nil {
                throw Failure("\(name) needs numbers or strings, got \(Self.typeName(best))", at: at)
            }
            return best
        case "sum":
            guard case let .array(elements) = a else { throw typeError(name, "an array", args, at: at) }
            var total: Value = .int(0)
            for element in elements { total = try Self.apply(.add, total, element, at: at) }
            return total
        case "lower", "upper", "trim":
            guard case let .string(s) = a else { throw typeError(name, "a string", args, at: at) }
            switch name {
            case "lower": return .string(s.lowercased())
            case "upper": return .string(s.uppercased())
            default: return .string(s.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        case "contains":
            switch (a, args[1]) {
            case let (.string(s), .string(sub)): return .bool(sub.isEmpty || s.contains(sub))
            case let (.array(x), v): return .bool(x.contains(v))
            case let (.object(o), .string(key)): return .bool(o[key] != nil)
            default: throw typeError(name, "a string and a string, an array and a value, or an object and a key", args, at: at)
            }
        case "startsWith", "endsWith":
            guard case let .string(s) = a, case let .string(affix) = args[1] else { throw typeError(name, "two strings", args, at: at) }
            return .bool(name == "startsWith" ? s.hasPrefix(affix) : s.hasSuffix(affix))
        case "split":
            guard case let .string(s) = a, case let .string(separator) = args[1] else { throw typeError(name, "two strings", args, at: at) }
            if separator.isEmpty { return .array(s.map { .string(String($0)) }) }
            return .array(s.components(separatedBy: separator).map { .string($0) })
        case "join":
            guard case let .array(elements) = a, case let .string(separator) = args[1] else {
                throw typeError(name, "an array and a string", args, at: at)
            }
            var parts: [String] = []
            for element in elements {
                guard case let .string(s) = element else {
                    throw Failure("join needs an array of strings, found \(Self.typeName(element))", at: at)
                }
                parts.append(s)
            }
            let joined = parts.joined(separator: separator)
            guard joined.utf8.count <= Self.maximumStringBytes else {
                throw Failure("join would make a string longer than \(Self.maximumStringBytes) bytes", at: at)
            }
            return .string(joined)
        case "string":
            if case let .string(s) = a { return .string(s) }
            // Written with a cap: a value whose parts are shared can write out far larger than it is.
            guard let text = a.jsonString(limit: Self.maximumStringBytes) else {
                throw Failure("string would make a string longer than \(Self.maximumStringBytes) bytes", at: at)
            }
            return .string(text)
        case "number":
            switch a {
            case .int, .double: return a
            case let .bool(b): return .int(b ? 1 : 0)
            case let .string(s):
                let text = s.trimmingCharacters(in: .whitespaces)
                if let i = Int64(text) { return .int(i) }
                if let d = Double(text), d.isFinite { return .double(d) }
                return .null
            default: return .null
            }
        case "now":
            return .int(now().nanoseconds / 1_000_000)
        case "keys", "values":
            guard case let .object(o) = a else { throw typeError(name, "an object", args, at: at) }
            return .array(name == "keys" ? o.keys.map { .string($0) } : Array(o.values))
        case "merge":
            var result = Value.Object()
            for arg in args {
                guard case let .object(o) = arg else { throw typeError(name, "objects", args, at: at) }
                for (key, value) in o { result[key] = value }
            }
            return .object(result)
        case "set":
            switch (a, args[1]) {
            case (.object(var o), .string(let key)):
                o[key] = args[2]
                return .object(o)
            case (.array(var x), _):
                guard let i = args[1].intValue, i >= 0, i < Int64(x.count) else {
                    throw Failure("set: index out of range", at: at)
                }
                x[Int(i)] = args[2]
                return .array(x)
            default: throw typeError(name, "an object and a key, or an array and an index", Array(args.prefix(2)), at: at)
            }
        case "append":
            guard case let .array(x) = a else { throw typeError(name, "an array first", args, at: at) }
            guard x.count + args.count - 1 <= Self.maximumArrayCount else {
                throw Failure("append would make an array longer than \(Self.maximumArrayCount) elements", at: at)
            }
            return .array(x + args.dropFirst())
        case "slice":
            let from = args[1].intValue
            let to = args.count > 2 ? args[2].intValue : nil
            guard let from, args.count == 2 || to != nil else { throw typeError(name, "integer bounds", args, at: at) }
            func clamp(_ i: Int64, _ count: Int) -> Int { Int(Swift.max(0, Swift.min(Int64(count), i < 0 ? Int64(count) + i : i))) }
            switch a {
            case let .array(x):
                let lower = clamp(from, x.count), upper = clamp(to ?? Int64(x.count), x.count)
                return .array(lower < upper ? Array(x[lower..<upper]) : [])
            case let .string(s):
                let chars = Array(s)
                let lower = clamp(from, chars.count), upper = clamp(to ?? Int64(chars.count), chars.count)
                return .string(lower < upper ? String(chars[lower..<upper]) : "")
            default: throw typeError(name, "an array or a string", args, at: at)
            }
        case "type":
            return .string(Self.typeName(a))
        default:
            return try applyText(name, args, at: at)
        }
    }
}
