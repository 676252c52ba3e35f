/// The syntax tree of a ``LinearRegex`` pattern.
indirect enum RegexNode {
    case empty
    case scalar(Unicode.Scalar)
    case any
    case set(ScalarSet, negated: Bool)
    case concat([RegexNode])
    case alternation([RegexNode])
    /// A group; `index` is the capturing group's number (1-based), `nil` for `(?: )`.
    case group(RegexNode, index: Int?)
    case repetition(RegexNode, min: Int, max: Int?, greedy: Bool)
    case start
    case end
    case wordBoundary(Bool)
}

/// Parses a pattern into a ``RegexNode`` by recursive descent, refusing what a linear-time
/// matcher cannot do (backreferences, lookaround) with the offset of the offending part.
/// Nesting is bounded so that hostile patterns cannot exhaust the stack.
struct RegexParser {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var depth = 0
    /// The names of the capturing groups in order (`nil` for unnamed ones).
    private(set) var groupNames: [String?] = []

    /// The deepest nesting of groups.
    static let maximumDepth = 100

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    mutating func parse() throws(LinearRegex.SyntaxError) -> RegexNode {
        let node = try parseAlternation()
        if index < scalars.count {
            // Only an unbalanced ')' stops the alternation before the end.
            throw error("unmatched ')'")
        }
        return node
    }

    // MARK: Helpers

    private func error(_ message: String, at offset: Int? = nil) -> LinearRegex.SyntaxError {
        LinearRegex.SyntaxError(message: message, offset: offset ?? index)
    }

    private var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private func peek(_ ahead: Int) -> Unicode.Scalar? {
        index + ahead < scalars.count ? scalars[index + ahead] : nil
    }

    private mutating func accept(_ c: Unicode.Scalar) -> Bool {
        guard peek == c else { return false }
        index += 1
        return true
    }

    // MARK: Grammar

    private mutating func parseAlternation() throws(LinearRegex.SyntaxError) -> RegexNode {
        var branches = [try parseConcatenation()]
        while accept("|") { branches.append(try parseConcatenation()) }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func parseConcatenation() throws(LinearRegex.SyntaxError) -> RegexNode {
        var items: [RegexNode] = []
        while let c = peek, c != "|", c != ")" {
            let atomStart = index
            let atom = try parseAtom()
            items.append(try parseQuantifiers(atom, atomStart: atomStart))
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concat(items)
        }
    }

    private mutating func parseQuantifiers(_ atom: RegexNode, atomStart: Int) throws(LinearRegex.SyntaxError) -> RegexNode {
        var node = atom
        var quantified = false
        while let c = peek {
            let quantifierStart = index
            var bounds: (Int, Int?)
            switch c {
            case "*": index += 1; bounds = (0, nil)
            case "+": index += 1; bounds = (1, nil)
            case "?": index += 1; bounds = (0, 1)
            case "{":
                guard let counted = try parseCount() else { return node }
                bounds = counted
            default:
                return node
            }
            if quantified { throw error("nothing to repeat: a quantifier cannot follow a quantifier", at: quantifierStart) }
            switch atom {
            case .start, .end, .wordBoundary, .empty:
                throw error("nothing to repeat", at: quantifierStart)
            default: break
            }
            let greedy = !accept("?")
            if peek == "+" { throw error("possessive quantifiers are not supported") }
            node = .repetition(node, min: bounds.0, max: bounds.1, greedy: greedy)
            quantified = true
        }
        return node
    }

    /// `{n}`, `{n,}`, `{n,m}`; `nil` (and nothing consumed) when the brace is not a count.
    private mutating func parseCount() throws(LinearRegex.SyntaxError) -> (Int, Int?)? {
        let start = index
        index += 1
        guard let min = readNumber() else { index = start; return nil }
        var max: Int? = min
        if accept(",") {
            max = peek == "}" ? nil : readNumber()
            if max == nil, peek != "}" { index = start; return nil }
        }
        guard accept("}") else { index = start; return nil }
        guard min <= LinearRegex.maximumRepeat, (max ?? 0) <= LinearRegex.maximumRepeat else {
            throw error("a count in {n,m} is at most \(LinearRegex.maximumRepeat)", at: start)
        }
        if let max, max < min { throw error("{\(min),\(max)}: the maximum is below the minimum", at: start) }
        return (min, max)
    }

    private mutating func readNumber() -> Int? {
        var value = 0
        var digits = 0
        while let c = peek, ("0"..."9").contains(c) {
            value = Swift.min(value * 10 + Int(c.value - 48), 1_000_000)
            digits += 1
            index += 1
        }
        return digits == 0 ? nil : value
    }

    private mutating func parseAtom() throws(LinearRegex.SyntaxError) -> RegexNode {
        let c = peek!
        let start = index
        index += 1
        switch c {
        case ".": return .any
        case "^": return .start
        case "$": return .end
        case "(": return try parseGroup(start)
        case "[": return try parseClass(start)
        case "\\": return try parseEscape(inClass: false).node
        case "*", "+", "?": throw error("nothing to repeat", at: start)
        case "{":
            index = start
            if try parseCount() != nil { throw error("nothing to repeat", at: start) }
            index = start + 1
            return .scalar(c)
        default: return .scalar(c)
        }
    }

    private mutating func parseGroup(_ start: Int) throws(LinearRegex.SyntaxError) -> RegexNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error("groups nested too deeply (the limit is \(Self.maximumDepth))", at: start) }
        var capture: Int?
        if accept("?") {
            if accept(":") {
                capture = nil
            } else if peek == "<", let next = peek(1), next != "=", next != "!" {
                index += 1
                let nameStart = index
                var name = ""
                while let c = peek, c != ">" {
                    guard c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" else {
                        throw error("invalid group name", at: index)
                    }
                    name.unicodeScalars.append(c)
                    index += 1
                }
                guard accept(">"), !name.isEmpty else { throw error("invalid group name", at: nameStart) }
                guard !groupNames.contains(name) else { throw error("duplicate group name '\(name)'", at: nameStart) }
                groupNames.append(name)
                capture = groupNames.count
            } else if peek == "=" || peek == "!" || (peek == "<" && (peek(1) == "=" || peek(1) == "!")) {
                throw error("lookaround assertions are not supported (they cannot be matched in linear time)", at: start)
            } else {
                throw error("unsupported group syntax '(?'", at: start)
            }
        } else {
            groupNames.append(nil)
            capture = groupNames.count
        }
        let body = try parseAlternation()
        guard accept(")") else { throw error("missing ')' for the group opened here", at: start) }
        return .group(body, index: capture)
    }

    private mutating func parseClass(_ start: Int) throws(LinearRegex.SyntaxError) -> RegexNode {
        let negated = accept("^")
        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while true {
            guard let c = peek else { throw error("missing ']' for the class opened here", at: start) }
            if c == "]", !first { index += 1; break }
            first = false
            let lowStart = index
            guard let low = try classMember(into: &ranges) else { continue }
            // A range a-z (a '-' before ']' is a literal).
            if peek == "-", let after = peek(1), after != "]" {
                index += 1
                guard let high = try classMember(into: &ranges) else {
                    throw error("a class range needs a single character at each end", at: lowStart)
                }
                guard low.value <= high.value else { throw error("a class range is out of order", at: lowStart) }
                ranges.append(low.value...high.value)
            } else {
                ranges.append(low.value...low.value)
            }
        }
        return .set(ScalarSet.normalized(ranges), negated: negated)
    }

    /// One member of a class: a scalar (returned), or a class escape added to `ranges` (`nil`).
    private mutating func classMember(into ranges: inout [ClosedRange<UInt32>]) throws(LinearRegex.SyntaxError) -> Unicode.Scalar? {
        let c = peek!
        index += 1
        guard c == "\\" else { return c }
        let escape = try parseEscape(inClass: true)
        if let scalar = escape.scalar { return scalar }
        if case let .set(set, negated) = escape.node {
            ranges.append(contentsOf: negated ? set.complement().ranges : set.ranges)
        }
        return nil
    }

    /// The escape after a `\` (already consumed): a scalar, or a class or assertion node.
    private mutating func parseEscape(inClass: Bool) throws(LinearRegex.SyntaxError) -> (node: RegexNode, scalar: Unicode.Scalar?) {
        let start = index - 1
        guard let c = peek else { throw error("a pattern cannot end with '\\'", at: start) }
        index += 1
        func single(_ s: Unicode.Scalar) -> (RegexNode, Unicode.Scalar?) { (.scalar(s), s) }
        switch c {
        case "d": return (.set(.digits, negated: false), nil)
        case "D": return (.set(.digits, negated: true), nil)
        case "w": return (.set(.word, negated: false), nil)
        case "W": return (.set(.word, negated: true), nil)
        case "s": return (.set(.space, negated: false), nil)
        case "S": return (.set(.space, negated: true), nil)
        case "b":
            if inClass { return single("\u{08}") }
            return (.wordBoundary(true), nil)
        case "B":
            if inClass { throw error("\\B is not valid in a class", at: start) }
            return (.wordBoundary(false), nil)
        case "n": return single("\n")
        case "r": return single("\r")
        case "t": return single("\t")
        case "f": return single("\u{0C}")
        case "v": return single("\u{0B}")
        case "0":
            if let d = peek, ("0"..."9").contains(d) { throw error("octal escapes are not supported", at: start) }
            return single("\u{0}")
        case "u": return single(try parseUnicodeEscape(start))
        case "1"..."9":
            throw error("backreferences are not supported (they cannot be matched in linear time)", at: start)
        default:
            let syntax: Set<Unicode.Scalar> = ["\\", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "^", "$", "/", "-"]
            guard syntax.contains(c) else { throw error("unknown escape '\\\(c)'", at: start) }
            return single(c)
        }
    }

    private mutating func parseUnicodeEscape(_ start: Int) throws(LinearRegex.SyntaxError) -> Unicode.Scalar {
        var value: UInt32 = 0
        if accept("{") {
            var digits = 0
            while let c = peek, c != "}" {
                guard let d = hex(c), digits < 6 else { throw error("invalid \\u{...} escape", at: start) }
                value = value * 16 + d
                digits += 1
                index += 1
            }
            guard accept("}"), digits > 0 else { throw error("invalid \\u{...} escape", at: start) }
        } else {
            for _ in 0..<4 {
                guard let c = peek, let d = hex(c) else { throw error("\\u needs four hexadecimal digits", at: start) }
                value = value * 16 + d
                index += 1
            }
        }
        guard let scalar = Unicode.Scalar(value) else { throw error("\\u escape of a value that is not a scalar", at: start) }
        return scalar
    }

    private func hex(_ c: Unicode.Scalar) -> UInt32? {
        switch c {
        case "0"..."9": return c.value - 48
        case "a"..."f": return c.value - 87
        case "A"..."F": return c.value - 55
        default: return nil
        }
    }
}
