import Foundation
import HubPipeline
import HubTesting
import Testing

@Suite("LinearRegex: a Pike VM, linear in the text")
struct LinearRegexTests {
    /// The first match of `pattern` in `text` as strings: the whole match, then each group.
    private func match(_ pattern: String, _ text: String) throws -> [String?]? {
        let regex = try LinearRegex(pattern)
        var steps = Int.max
        let scalars = Array(text.unicodeScalars)
        guard let m = try regex.firstMatch(in: scalars, steps: &steps) else { return nil }
        return m.ranges.map { range in range.map { String(String.UnicodeScalarView(scalars[$0])) } }
    }

    @Test(arguments: [
        ("abc", "xxabcxx", ["abc"]),
        ("a.c", "abc a\nc", ["abc"]),
        ("a.c", "a\nc", nil),
        ("colou?r", "my color", ["color"]),
        ("\\d+", "order 1234 shipped", ["1234"]),
        ("\\w+@\\w+\\.com", "mail bob@example.com now", ["bob@example.com"]),
        ("^abc", "abcabc", ["abc"]),
        ("^bc", "abc", nil),
        ("bc$", "abcbc", ["bc"]),
        ("[a-c]+", "xxbcaxx", ["bca"]),
        ("[^a-c]+", "abcxyzabc", ["xyz"]),
        ("[\\d-]+", "tel 555-1234.", ["555-1234"]),
        ("a|ab", "ab", ["a"]),                  // leftmost-first: the first alternative wins
        ("ab|a", "ab", ["ab"]),
        ("a*", "aaa", ["aaa"]),
        ("a*?", "aaa", [""]),
        ("a+?", "aaa", ["a"]),
        ("a{2,3}", "aaaa", ["aaa"]),
        ("a{2,3}?", "aaaa", ["aa"]),
        ("a{2}", "a aa", ["aa"]),
        ("a{2,}", "aaaaa", ["aaaaa"]),
        ("x{,2}", "x{,2}", ["x{,2}"]),          // not a count: literal braces
        ("(\\d+)-(\\d+)", "call 555-1234", ["555-1234", "555", "1234"]),
        ("(a)|(b)", "b", ["b", nil, "b"]),
        ("(?:ab)+", "ababx", ["abab"]),
        ("(?<year>\\d{4})-(?<month>\\d{2})", "on 2026-11-23", ["2026-11", "2026", "11"]),
        ("(a|b)*", "abab", ["abab", "b"]),       // a repeated group keeps its last iteration
        ("\\bcat\\b", "concat cat", ["cat"]),
        ("\\Bcat", "concat cat", ["cat"]),
        ("\\s+", "a \t\u{3000}b", [" \t\u{3000}"]),
        ("é+", "caféé!", ["éé"]),
        ("\\u00e9", "café", ["é"]),
        ("\\u{1F600}", "smile 😀", ["😀"]),
        ("", "abc", [""]),
        ("\\.", "a.b", ["."]),
    ] as [(String, String, [String?]?)])
    func matchesLikeABacktrackingEngine(pattern: String, text: String, expected: [String?]?) throws {
        #expect(try match(pattern, text) == expected, "/\(pattern)/ on \(text.debugDescription)")
    }

    @Test(arguments: [
        ("(a)\\1", "backreferences are not supported (they cannot be matched in linear time)", 3),
        ("a(?=b)", "lookaround assertions are not supported (they cannot be matched in linear time)", 1),
        ("(?<!a)b", "lookaround assertions are not supported (they cannot be matched in linear time)", 0),
        ("(ab", "missing ')' for the group opened here", 0),
        ("ab)", "unmatched ')'", 2),
        ("*a", "nothing to repeat", 0),
        ("a**", "nothing to repeat: a quantifier cannot follow a quantifier", 2),
        ("a{1001}", "a count in {n,m} is at most 1000", 1),
        ("a{3,2}", "{3,2}: the maximum is below the minimum", 1),
        ("[abc", "missing ']' for the class opened here", 0),
        ("[z-a]", "a class range is out of order", 1),
        ("\\q", "unknown escape '\\q'", 0),
        ("a\\", "a pattern cannot end with '\\'", 1),
        ("a*+", "possessive quantifiers are not supported", 2),
    ] as [(String, String, Int)])
    func patternsOutsideTheSubsetAreRefusedWithTheirPosition(pattern: String, message: String, offset: Int) {
        #expect(throws: LinearRegex.SyntaxError(message: message, offset: offset)) { try LinearRegex(pattern) }
    }

    @Test func hugeExpansionsAreRefused() {
        #expect(throws: LinearRegex.SyntaxError.self) { try LinearRegex("((a{1000}){1000}){1000}") }
        #expect(throws: LinearRegex.SyntaxError.self) { try LinearRegex(String(repeating: "(", count: 200) + "a" + String(repeating: ")", count: 200)) }
    }

    /// The steps one search takes.
    private func steps(_ pattern: String, _ text: String) throws -> (matched: Bool, steps: Int, programSize: Int) {
        let regex = try LinearRegex(pattern)
        var budget = Int.max
        let matched = try regex.firstMatch(in: Array(text.unicodeScalars), steps: &budget) != nil
        return (matched, Int.max - budget, regex.programSize)
    }

    /// Patterns that make a backtracking matcher take exponential time on a text that almost
    /// matches finish here in a number of steps linear in the text: counted, not timed.
    @Test(arguments: [("(a*)*b", false), ("(a|a)*b", false), ("(a|aa)+c", false), ("^(\\w+\\s?)*$", false),
                      ("(x+x+)+y", false), ("(a?){30}a{30}", true)])
    func catastrophicPatternsTakeLinearSteps(pattern: String, matches: Bool) throws {
        let text = String(repeating: "a", count: 20_000) + "!"
        let long = try steps(pattern, text)
        #expect(long.matched == matches)
        #expect(long.steps <= 2 * long.programSize * (text.unicodeScalars.count + 1),
                "\(pattern): \(long.steps) steps for \(text.count) characters")
        // Twice the text, about twice the steps (not four times, not 2^n).
        let half = try steps(pattern, String(repeating: "a", count: 10_000) + "!")
        #expect(Double(long.steps) <= 2.2 * Double(half.steps), "\(pattern): \(half.steps) then \(long.steps)")
    }

    @Test func aSearchStopsWhenItsStepsRunOut() throws {
        let regex = try LinearRegex("(a*)*b")
        var steps = 1000
        #expect(throws: LinearRegex.StepLimitExceeded.self) {
            try regex.firstMatch(in: Array(String(repeating: "a", count: 10_000).unicodeScalars), steps: &steps)
        }
    }

    /// Random patterns over {a, b} and short texts: the same leftmost match as ICU's
    /// backtracking `NSRegularExpression` (whose time is fine on such small inputs). Repeated
    /// parts never match the empty string: there leftmost-first engines disagree among
    /// themselves (RE2 documents the same divergence from Perl), and this one is documented.
    @Test(arguments: 0..<300)
    func sameMatchAsICUOnRandomPatterns(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 7)
        let pattern = Self.randomPattern(depth: 3, using: &generator).text
        let regex = try LinearRegex(pattern)
        let icu = try NSRegularExpression(pattern: pattern)
        for _ in 0..<10 {
            let length = Int.random(in: 1...8, using: &generator)
            let text = String((0..<length).map { _ in Bool.random(using: &generator) ? Character("a") : Character("b") })
            var steps = Int.max
            let ours = try regex.firstMatch(in: Array(text.unicodeScalars), steps: &steps)
            let theirs = icu.firstMatch(in: text, range: NSRange(location: 0, length: text.utf16.count))
            let theirRanges = theirs.map { result in
                (0..<result.numberOfRanges).map { i -> Range<Int>? in
                    let r = result.range(at: i)
                    return r.location == NSNotFound ? nil : r.location..<(r.location + r.length)
                }
            }
            #expect(ours?.ranges == theirRanges, "/\(pattern)/ on \"\(text)\"")
        }
    }

    /// A random pattern and whether it matches the empty string.
    private static func randomPattern<G: RandomNumberGenerator>(depth: Int, using g: inout G) -> (text: String, nullable: Bool) {
        let atoms = ["a", "b", ".", "[ab]", "[^a]", "\\w"]
        func atom() -> (text: String, nullable: Bool) {
            if depth > 0, Int.random(in: 0..<4, using: &g) == 0 {
                let inner = randomPattern(depth: depth - 1, using: &g)
                return ((Bool.random(using: &g) ? "(" : "(?:") + inner.text + ")", inner.nullable)
            }
            return (atoms.randomElement(using: &g)!, false)
        }
        let quantifiers: [(String, Bool)] = [("", false), ("", false), ("*", true), ("+", false), ("?", true),
                                             ("{1,2}", false), ("*?", true), ("+?", false), ("??", true), ("{0,2}?", true)]
        var branches: [(String, Bool)] = []
        for _ in 0..<Int.random(in: 1...2, using: &g) {
            var branch = ""
            var nullable = true
            for _ in 0..<Int.random(in: 1...3, using: &g) {
                let a = atom()
                let (q, makesNullable) = a.nullable ? ("", false) : quantifiers.randomElement(using: &g)!
                branch += a.text + q
                nullable = nullable && (a.nullable || makesNullable)
            }
            branches.append((branch, nullable))
        }
        return (branches.map(\.0).joined(separator: "|"), branches.contains { $0.1 })
    }
}
