import Foundation
import HubValue

/// The text functions: regular expressions (``LinearRegex``), number, currency and date
/// formatting (Foundation's ICU formatters, with fixed locales so the output does not depend
/// on the machine), and sorting.
extension ExpressionFunctions {
    /// The functions of this file with their argument counts.
    static let textArity: [String: ClosedRange<Int>] = [
        "matches": 2...2, "match": 2...2, "replace": 3...3,
        "formatNumber": 1...3, "formatCurrency": 2...3, "formatDate": 1...4,
        "sort": 1...2,
    ]

    /// The functions whose second argument is a regular expression, checked at compile time
    /// when it is a string literal.
    static let regexFunctions: Set<String> = ["matches", "match", "replace"]

    /// The most fraction digits `formatNumber` and `formatCurrency` accept.
    static let maximumDecimals = 20
    /// The longest date pattern.
    static let maximumDatePatternLength = 100
    /// The locale of formatting unless one is given.
    static let defaultLocale = "en_US"
}

extension ExpressionEvaluator {
    /// `sort(array)` and `sort(array, x -> key)`: evaluated here because the key is a lambda.
    func sort(_ source: ExpressionSyntax, key: ExpressionSyntax?, at: SourcePosition) throws(Failure) -> Value {
        guard case let .array(elements) = try evaluate(source) else {
            throw Failure("sort needs an array as its first argument", at: at)
        }
        var keys: [Value] = []
        keys.reserveCapacity(elements.count)
        for element in elements {
            guard let key else {
                keys.append(element)
                continue
            }
            var scope = self
            if case let .lambda(parameter, body) = key.kind {
                scope.variables[parameter] = element
                keys.append(try scope.evaluate(body))
            } else {
                scope.current = element
                keys.append(try scope.evaluate(key))
            }
        }
        // n log n comparisons, counted against the evaluation's steps.
        let n = elements.count
        budget.remaining -= n * max(1, Int.bitWidth - n.leadingZeroBitCount)
        if budget.remaining < 0 { throw Failure("the expression took too many steps", at: at) }
        var failure: Failure?
        // Stable: equal keys keep their order.
        let order = (0..<n).sorted { i, j in
            guard failure == nil else { return false }
            guard let c = Self.compare(keys[i], keys[j]) else {
                failure = Failure(
                    "sort needs numbers or strings to compare, got \(Self.typeName(keys[i])) and \(Self.typeName(keys[j]))", at: at)
                return false
            }
            return c < 0 || (c == 0 && i < j)
        }
        if let failure { throw failure }
        return .array(order.map { elements[$0] })
    }

    func applyText(_ name: String, _ args: [Value], at: SourcePosition) throws(Failure) -> Value {
        switch name {
        case "matches", "match", "replace":
            guard case let .string(text) = args[0], case let .string(pattern) = args[1] else {
                throw Failure("\(name) needs a string and a pattern (a string), got \(args.prefix(2).map(Self.typeName).joined(separator: " and "))", at: at)
            }
            let regex: LinearRegex
            do throws(LinearRegex.SyntaxError) {
                regex = try cache.regex(pattern)
            } catch {
                throw Failure("\(name): invalid pattern: \(error.message) (at character \(error.offset + 1) of the pattern)", at: at)
            }
            let scalars = Array(text.unicodeScalars)
            if name == "replace" {
                guard case let .string(replacement) = args[2] else {
                    throw Failure("replace needs a string as its replacement, got \(Self.typeName(args[2]))", at: at)
                }
                return .string(try replaceAll(regex, in: scalars, with: Array(replacement.unicodeScalars), at: at))
            }
            guard let found = try search(regex, in: scalars, from: 0, at: at) else {
                return name == "matches" ? .bool(false) : .null
            }
            if name == "matches" { return .bool(true) }
            return .array(found.ranges.map { range in
                range.map { .string(String(String.UnicodeScalarView(scalars[$0]))) } ?? .null
            })
        case "formatNumber":
            let decimals = try decimalsArgument(args.count > 1 ? args[1] : .null, name, at: at)
            let locale = try localeArgument(args.count > 2 ? args[2] : .null, name, at: at)
            switch args[0] {
            case let .int(i):
                if let decimals { return .string(i.formatted(.number.precision(.fractionLength(decimals)).locale(locale))) }
                return .string(i.formatted(.number.locale(locale)))
            case let .double(d):
                guard d.isFinite else { throw Failure("formatNumber needs a finite number", at: at) }
                if let decimals { return .string(d.formatted(.number.precision(.fractionLength(decimals)).locale(locale))) }
                return .string(d.formatted(.number.precision(.fractionLength(0...6)).locale(locale)))
            default:
                throw Failure("formatNumber needs a number, got \(Self.typeName(args[0]))", at: at)
            }
        case "formatCurrency":
            guard case let .string(code) = args[1], code.utf8.count == 3, code.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else {
                throw Failure("formatCurrency needs an ISO 4217 currency code such as \"USD\", got \(args[1].jsonString())", at: at)
            }
            let locale = try localeArgument(args.count > 2 ? args[2] : .null, name, at: at)
            let amount: Double
            switch args[0] {
            case let .int(i): amount = Double(i)
            case let .double(d) where d.isFinite: amount = d
            default: throw Failure("formatCurrency needs a finite number, got \(Self.typeName(args[0]))", at: at)
            }
            return .string(amount.formatted(.currency(code: code).locale(locale)))
        case "formatDate":
            guard let milliseconds = args[0].intValue ?? args[0].doubleValue.flatMap({ $0.isFinite ? Int64(exactly: $0.rounded(.down)) : nil }) else {
                throw Failure("formatDate needs milliseconds since the Unix epoch (a number), got \(Self.typeName(args[0]))", at: at)
            }
            // Years 1 to 9999 (what ISO 8601 writes with four digits).
            guard milliseconds >= -62_135_596_800_000, milliseconds <= 253_402_300_799_999 else {
                throw Failure("formatDate: \(milliseconds) is outside the years 1 to 9999", at: at)
            }
            guard args.count > 1, !args[1].isNull else { return .string(Self.iso8601(milliseconds: milliseconds)) }
            guard case let .string(pattern) = args[1], !pattern.isEmpty,
                  pattern.unicodeScalars.count <= ExpressionFunctions.maximumDatePatternLength else {
                throw Failure("formatDate needs a date pattern (a string of at most \(ExpressionFunctions.maximumDatePatternLength) characters) such as \"yyyy-MM-dd HH:mm\", got \(args[1].jsonString())", at: at)
            }
            var zone = TimeZone(identifier: "UTC")!
            if args.count > 2, !args[2].isNull {
                guard case let .string(identifier) = args[2], let found = TimeZone(identifier: identifier) else {
                    throw Failure("formatDate: unknown time zone \(args[2].jsonString()) (use an IANA name such as \"Europe/Paris\")", at: at)
                }
                zone = found
            }
            var localeIdentifier = "en_US_POSIX"
            if args.count > 3, !args[3].isNull {
                localeIdentifier = try localeArgument(args[3], name, at: at).identifier
            }
            let formatter = cache.dateFormatter(pattern: pattern, timeZone: zone, locale: localeIdentifier)
            // The formatter rounds to its precision, so the double's error never shows.
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            return .string(formatter.string(from: date))
        default:
            throw Failure("unknown function '\(name)'", at: at)
        }
    }

    /// The first match of `regex` at or after `start`, its steps counted against the budget.
    private func search(_ regex: LinearRegex, in scalars: [Unicode.Scalar], from start: Int, at: SourcePosition) throws(Failure) -> LinearRegex.Match? {
        var steps = budget.remaining
        defer { budget.remaining = steps }
        do throws(LinearRegex.StepLimitExceeded) {
            return try regex.firstMatch(in: scalars, from: start, steps: &steps)
        } catch {
            steps = -1
            throw Failure("the expression took too many steps", at: at)
        }
    }

    /// Every non-overlapping match replaced; `$0`...`$9` in the replacement are the match and
    /// its groups, `$$` a dollar sign.
    private func replaceAll(_ regex: LinearRegex, in scalars: [Unicode.Scalar], with replacement: [Unicode.Scalar], at: SourcePosition) throws(Failure) -> String {
        var out = String.UnicodeScalarView()
        var position = 0
        var copied = 0
        while position <= scalars.count, let found = try search(regex, in: scalars, from: position, at: at) {
            let range = found.range
            out.append(contentsOf: scalars[copied..<range.lowerBound])
            var i = 0
            while i < replacement.count {
                let c = replacement[i]
                if c == "$", i + 1 < replacement.count {
                    let next = replacement[i + 1]
                    if next == "$" {
                        out.append("$")
                        i += 2
                        continue
                    }
                    if ("0"..."9").contains(next) {
                        let group = Int(next.value - 48)
                        if group < found.ranges.count, let r = found.ranges[group] { out.append(contentsOf: scalars[r]) }
                        i += 2
                        continue
                    }
                }
                out.append(c)
                i += 1
            }
            guard out.count <= Self.maximumStringBytes else {
                throw Failure("replace would make a string longer than \(Self.maximumStringBytes) characters", at: at)
            }
            copied = range.upperBound
            // An empty match moves on by one scalar, so the search always advances.
            position = range.isEmpty ? range.upperBound + 1 : range.upperBound
        }
        if copied < scalars.count { out.append(contentsOf: scalars[copied...]) }
        return String(out)
    }

    private func decimalsArgument(_ value: Value, _ name: String, at: SourcePosition) throws(Failure) -> Int? {
        if value.isNull { return nil }
        guard let d = value.intValue, d >= 0, d <= ExpressionFunctions.maximumDecimals else {
            throw Failure("\(name) needs a number of decimals from 0 to \(ExpressionFunctions.maximumDecimals), got \(value.jsonString())", at: at)
        }
        return Int(d)
    }

    private func localeArgument(_ value: Value, _ name: String, at: SourcePosition) throws(Failure) -> Locale {
        if value.isNull { return Locale(identifier: ExpressionFunctions.defaultLocale) }
        guard case let .string(identifier) = value, !identifier.isEmpty, identifier.utf8.count <= 64,
              identifier.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45 })
        else {
            throw Failure("\(name) needs a locale such as \"en_US\" or \"de_DE\", got \(value.jsonString())", at: at)
        }
        return Locale(identifier: identifier)
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ` (UTC) of milliseconds since the epoch, computed exactly.
    static func iso8601(milliseconds: Int64) -> String {
        let dayMilliseconds: Int64 = 86_400_000
        var days = milliseconds / dayMilliseconds
        var rest = milliseconds % dayMilliseconds
        if rest < 0 {
            rest += dayMilliseconds
            days -= 1
        }
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3_600_000, 2)):\(pad(rest / 60_000 % 60, 2)):\(pad(rest / 1000 % 60, 2)).\(pad(rest % 1000, 3))Z"
    }
}
