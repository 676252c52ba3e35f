import Foundation

/// What the evaluations of one compiled stage share: the regular expressions and date
/// formatters its functions build from their (usually constant) arguments, so that
/// `matches(.name, "^[a-z]+$")` compiles its pattern once, not once per value.
///
/// A stage's evaluations all run on its pipeline's event loop, one at a time, so the
/// cache is not locked. Each table holds at most ``maximumEntries``; a pattern computed
/// per value cannot make it grow without bound (the table is emptied when full).
final class EvaluationCache {
    /// The most patterns (and, separately, date formatters) kept.
    static let maximumEntries = 32

    private var regexes: [String: LinearRegex] = [:]
    private var dateFormatters: [DateFormatterKey: DateFormatter] = [:]

    private struct DateFormatterKey: Hashable {
        let pattern: String
        let timeZone: String
        let locale: String
    }

    /// The compiled `pattern`.
    func regex(_ pattern: String) throws(LinearRegex.SyntaxError) -> LinearRegex {
        if let known = regexes[pattern] { return known }
        let regex = try LinearRegex(pattern)
        if regexes.count >= Self.maximumEntries { regexes.removeAll(keepingCapacity: true) }
        regexes[pattern] = regex
        return regex
    }

    /// A formatter of `pattern` (Unicode date field symbols) in `timeZone`, for `locale`.
    func dateFormatter(pattern: String, timeZone: TimeZone, locale: String) -> DateFormatter {
        let key = DateFormatterKey(pattern: pattern, timeZone: timeZone.identifier, locale: locale)
        if let known = dateFormatters[key] { return known }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: locale)
        formatter.timeZone = timeZone
        formatter.dateFormat = pattern
        if dateFormatters.count >= Self.maximumEntries { dateFormatters.removeAll(keepingCapacity: true) }
        dateFormatters[key] = formatter
        return formatter
    }
}
