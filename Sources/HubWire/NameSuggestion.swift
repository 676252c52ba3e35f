/// "Did you mean …?" for error messages: the known name closest to a mistyped one.
public enum NameSuggestion {
    /// The name among `candidates` that `name` most likely misspells, or `nil` when
    /// none is close: equal but for case, a unique prefix of at least 3 characters,
    /// or at most 1 edit (2 for names of 5 characters or more) away, counting a
    /// swap of two neighbours as one edit. Ties go to the first candidate in
    /// sorted order.
    public static func closest(to name: String, among candidates: some Sequence<String>) -> String? {
        let sorted = Set(candidates).sorted()
        let lower = name.lowercased()
        if let sameButCase = sorted.first(where: { $0.lowercased() == lower && $0 != name }) { return sameButCase }
        let limit = name.count >= 5 ? 2 : 1
        var best: (name: String, distance: Int)?
        for candidate in sorted where candidate != name {
            let distance = editDistance(lower, candidate.lowercased(), limit: limit)
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.name }
        if name.count >= 3 {
            let extended = sorted.filter { $0.lowercased().hasPrefix(lower) }
            if extended.count == 1 { return extended[0] }
        }
        return nil
    }

    /// The optimal-string-alignment distance of `a` and `b` (insertions, deletions,
    /// substitutions, swaps of neighbours), or `limit + 1` once it must exceed `limit`.
    static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a), b = Array(b)
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            if rowMinimum > limit { return limit + 1 }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
