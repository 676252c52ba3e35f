/// A regular expression matched in time linear in the length of the text: a
/// Thompson NFA run as a Pike VM (every alternative advanced in lock step, one
/// thread per program position), so that no pattern can backtrack
/// catastrophically. Swift's `Regex` and `NSRegularExpression` backtrack:
/// `(a*)*b` on a long run of `a`s takes them exponential time; here it takes
/// a number of steps proportional to the text's length times the pattern's size.
///
/// The syntax is the common subset of ECMAScript and PCRE, on Unicode scalars:
///
/// - literals, `.` (any scalar but `\n`), escapes `\\ \. \* \+ \? \( \) \[ \] \{ \} \| \^ \$ \/ \-`,
///   `\n \r \t \f \v \0`, `\uXXXX`, `\u{X...}`;
/// - classes `[abc]`, `[^a-z]`, `\d \D \w \W \s \S` (ASCII digits and word characters,
///   Unicode white space), also inside brackets;
/// - anchors `^` and `$` (the start and end of the text), `\b` and `\B`;
/// - groups `( )`, `(?: )`, `(?<name> )`; alternation `|`;
/// - quantifiers `* + ? {n} {n,} {n,m}` (n, m at most 1000), each also lazy (`*?` ...).
///
/// Backreferences and lookaround cannot be matched in linear time and are refused,
/// as is anything else outside the subset, with the position of the offending part.
/// Matching is leftmost-first, as in backtracking engines: the first alternative
/// and the greedy choice win, and a group repeated keeps its last iteration.
public struct LinearRegex: Sendable {
    /// Why a pattern is refused.
    public struct SyntaxError: Error, Hashable, Sendable {
        /// What is wrong, e.g. `backreferences are not supported`.
        public var message: String
        /// The offset in the pattern, in Unicode scalars, of the offending part.
        public var offset: Int

        /// An error `message` at scalar `offset` of the pattern.
        public init(message: String, offset: Int) {
            self.message = message
            self.offset = offset
        }
    }

    /// A match was abandoned because it took more steps than it was given.
    public struct StepLimitExceeded: Error, Hashable, Sendable {
        /// The error of a search that ran out of steps.
        public init() {}
    }

    /// One match: the scalar range of the whole match and of each group (`nil` when the
    /// group did not take part).
    public struct Match: Hashable, Sendable {
        /// Index 0 is the whole match, 1... the groups in the order of their `(`.
        public var ranges: [Range<Int>?]
        /// The whole match.
        public var range: Range<Int> { ranges[0]! }
    }

    /// The pattern's source.
    public let pattern: String
    /// The number of capturing groups (the whole match not included).
    public let groupCount: Int
    /// The names of the groups, `nil` for unnamed ones (index 0 is group 1).
    public let groupNames: [String?]
    /// The number of instructions of the compiled program (what one step of the text costs at most).
    public var programSize: Int { program.count }

    let program: [Instruction]
    let sets: [ScalarSet]

    /// The largest accepted program, so that a pattern's size (and each step's cost) stays bounded.
    public static let maximumProgramSize = 20_000
    /// The largest count in `{n,m}`.
    public static let maximumRepeat = 1000

    /// Compiles `pattern`; throws ``SyntaxError`` for what is outside the supported syntax.
    public init(_ pattern: String, maximumProgramSize: Int = LinearRegex.maximumProgramSize) throws(SyntaxError) {
        self.pattern = pattern
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        var compiler = RegexCompiler(maximumSize: maximumProgramSize)
        try compiler.compileWhole(tree)
        program = compiler.program
        sets = compiler.sets
        groupCount = parser.groupNames.count
        groupNames = parser.groupNames
    }

    // MARK: Matching

    /// The leftmost match in `text` starting at or after scalar offset `start`, or `nil`.
    /// Each thread step counts one against `steps`; when they run out the match stops with
    /// ``StepLimitExceeded``. A whole search takes at most about
    /// `2 × programSize × (text length + 1)` steps.
    public func firstMatch(in text: [Unicode.Scalar], from start: Int = 0, steps: inout Int) throws(StepLimitExceeded) -> Match? {
        var vm = PikeVM(regex: self, text: text)
        return try vm.run(from: start, steps: &steps)
    }

    /// Whether `text` contains a match.
    public func matches(_ text: String, steps: inout Int) throws(StepLimitExceeded) -> Bool {
        try firstMatch(in: Array(text.unicodeScalars), steps: &steps) != nil
    }

    // MARK: Program

    enum Instruction: Sendable {
        case scalar(Unicode.Scalar)
        case any
        case set(Int, negated: Bool)
        /// Continue at both, the first with priority.
        case split(Int, Int)
        case jump(Int)
        case save(Int)
        case assertStart
        case assertEnd
        case wordBoundary(Bool)
        case match
    }
}

/// A set of scalars as sorted, disjoint closed ranges of their values.
struct ScalarSet: Sendable, Hashable {
    var ranges: [ClosedRange<UInt32>]

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        var low = 0, high = ranges.count - 1
        while low <= high {
            let mid = (low + high) / 2
            if v < ranges[mid].lowerBound { high = mid - 1 } else if v > ranges[mid].upperBound { low = mid + 1 } else { return true }
        }
        return false
    }

    /// Sorted and merged.
    static func normalized(_ input: [ClosedRange<UInt32>]) -> ScalarSet {
        let sorted = input.sorted { $0.lowerBound < $1.lowerBound }
        var out: [ClosedRange<UInt32>] = []
        for r in sorted {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return ScalarSet(ranges: out)
    }

    /// Every scalar value not in the set (surrogates included, they never occur in text).
    func complement() -> ScalarSet {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in ranges {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = r.upperBound &+ 1
        }
        if next <= 0x10FFFF, !(ranges.last.map { $0.upperBound >= 0x10FFFF } ?? false) { out.append(next...0x10FFFF) }
        return ScalarSet(ranges: out)
    }

    static let digits = ScalarSet(ranges: [48...57])
    static let word = ScalarSet(ranges: [48...57, 65...90, 95...95, 97...122])
    static let space = normalized([
        9...13, 32...32, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029,
        0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])

    static func isWord(_ scalar: Unicode.Scalar) -> Bool { word.contains(scalar) }
}
