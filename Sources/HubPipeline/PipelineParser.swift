import HubWire

/// Parses pipeline source text into a ``PipelineSyntax`` (recursive descent
/// with a depth bound, so hostile text cannot exhaust the stack).
///
/// ```
/// pipeline := stage ("|" stage)*
/// stage    := NAME | NAME "(" [arg ("," arg)*] ")"
/// arg      := [NAME ":"] (expression | pipeline | duration)
/// ```
public struct PipelineParser {
    private let tokens: [PipelineLexer.Located]
    private let bytes: [UInt8]
    private let limits: PipelineLimits
    private var index = 0
    private var depth = 0
    /// Stages parsed so far (explicit pipeline stages only).
    private var stageCount = 0

    private static let keywords: Set<String> = ["and", "or", "not", "true", "false", "null"]

    /// Parses `source` under `limits` (length, stages, nesting depth).
    public static func parse(_ source: String, limits: PipelineLimits = PipelineLimits()) throws(HubError) -> PipelineSyntax {
        let length = source.utf8.count
        guard length <= limits.maxSourceLength else {
            throw PipelineLexer.error(
                "pipeline text is \(length) bytes, more than the limit of \(limits.maxSourceLength)", at: .start)
        }
        var parser = PipelineParser(tokens: try PipelineLexer.tokenize(source), bytes: Array(source.utf8), limits: limits)
        let pipeline = try parser.parsePipeline()
        let next = parser.current
        if next.token != .end {
            if next.token == .symbol(")") {
                throw PipelineLexer.error("unexpected ')' (no matching '(')", at: next.position)
            }
            throw PipelineLexer.error("expected '|' or end of text, found \(next.token.display)", at: next.position)
        }
        return pipeline
    }

    private init(tokens: [PipelineLexer.Located], bytes: [UInt8], limits: PipelineLimits) {
        self.tokens = tokens
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: - Helpers

    private var current: PipelineLexer.Located { tokens[index] }
    private var token: PipelineLexer.Token { tokens[index].token }

    private func peekToken(_ ahead: Int) -> PipelineLexer.Token {
        tokens[min(index + ahead, tokens.count - 1)].token
    }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func isSymbol(_ s: String) -> Bool { token == .symbol(s) }

    private mutating func accept(_ s: String) -> Bool {
        guard isSymbol(s) else { return false }
        advance()
        return true
    }

    private func error(_ message: String) -> HubError {
        PipelineLexer.error(message, at: current.position)
    }

    private mutating func expect(_ s: String, _ message: String) throws(HubError) {
        guard accept(s) else { throw error("\(message), found \(token.display)") }
    }

    private mutating func enter() throws(HubError) {
        depth += 1
        if depth > limits.maxExpressionDepth {
            throw error("nested too deeply (the limit is \(limits.maxExpressionDepth) levels)")
        }
    }

    private func text(from start: Int) -> String {
        let end = index > 0 ? tokens[index - 1].end : start
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }

    private mutating func countStage(at position: SourcePosition) throws(HubError) {
        stageCount += 1
        if stageCount > limits.maxStages {
            throw PipelineLexer.error("too many stages (the limit is \(limits.maxStages))", at: position)
        }
    }

    // MARK: - Pipelines

    private mutating func parsePipeline() throws(HubError) -> PipelineSyntax {
        let start = current.position
        var stages = [try parseStage()]
        while accept("|") { stages.append(try parseStage()) }
        return PipelineSyntax(stages: stages, position: start)
    }

    private mutating func parseStage() throws(HubError) -> StageSyntax {
        let start = current
        guard case let .name(name) = start.token, !Self.keywords.contains(name) else {
            throw error("expected a stage name, found \(token.display)")
        }
        try countStage(at: start.position)
        advance()
        var arguments: [ArgumentSyntax]?
        if isSymbol("(") {
            advance()
            arguments = try parseArguments()
        }
        return StageSyntax(name: name, arguments: arguments, position: start.position, text: text(from: start.position.offset))
    }

    /// Arguments after `(` up to and including `)`.
    private mutating func parseArguments() throws(HubError) -> [ArgumentSyntax] {
        var arguments: [ArgumentSyntax] = []
        if accept(")") { return arguments }
        repeat {
            arguments.append(try parseArgument())
        } while accept(",")
        guard accept(")") else {
            if token == .end { throw error("expected ')' after argument list, found end of text") }
            throw error("expected ')' after argument list, found \(token.display)")
        }
        return arguments
    }

    private mutating func parseArgument() throws(HubError) -> ArgumentSyntax {
        try enter()
        defer { depth -= 1 }
        var label: String?
        if case let .name(name) = token, !Self.keywords.contains(name), peekToken(1) == .symbol(":"), !name.contains(".") {
            label = name
            advance()
            advance()
        }
        let start = current.position
        if case let .duration(duration) = token, peekToken(1) == .symbol(",") || peekToken(1) == .symbol(")") {
            advance()
            return ArgumentSyntax(label: label, kind: .duration(duration), position: start)
        }
        let expression = try parseExpression()
        guard isSymbol("|") else {
            return ArgumentSyntax(label: label, kind: .expression(expression), position: start)
        }
        guard let first = try stage(of: expression) else {
            throw PipelineLexer.error("only a stage can start a pipeline before '|'", at: expression.position)
        }
        var stages = [first]
        while accept("|") { stages.append(try parseStage()) }
        return ArgumentSyntax(label: label, kind: .pipeline(PipelineSyntax(stages: stages, position: start)), position: start)
    }

    /// The stage an expression denotes when it is a bare name or a call, else `nil`.
    private mutating func stage(of expression: ExpressionSyntax) throws(HubError) -> StageSyntax? {
        switch expression.kind {
        case let .name(name):
            try countStage(at: expression.position)
            return StageSyntax(name: name, arguments: nil, position: expression.position, text: name)
        case let .call(name, arguments, text):
            try countStage(at: expression.position)
            return StageSyntax(name: name, arguments: arguments, position: expression.position, text: text)
        default:
            return nil
        }
    }

    // MARK: - Expressions

    private mutating func parseExpression() throws(HubError) -> ExpressionSyntax {
        try enter()
        defer { depth -= 1 }
        let condition = try parseOr()
        guard isSymbol("?") else { return condition }
        advance()
        let then = try parseExpression()
        try expect(":", "expected ':' in conditional expression")
        let otherwise = try parseExpression()
        return ExpressionSyntax(.conditional(condition, then, otherwise), at: condition.position)
    }

    /// `"a \(x) b"` as `"a " + string(x) + " b"`: each interpolated expression is parsed from
    /// its own tokens (at the same nesting depth, counted against the same limits) and turned
    /// into text by `string()` (a string unchanged, anything else as compact JSON).
    private mutating func interpolation(_ parts: [PipelineLexer.TemplatePart], at position: SourcePosition) throws(HubError) -> ExpressionSyntax {
        // The pieces are joined by a chain of '+', as deep as it is long.
        guard depth + parts.count <= limits.maxExpressionDepth else {
            throw PipelineLexer.error("nested too deeply (the limit is \(limits.maxExpressionDepth) levels)", at: position)
        }
        var result: ExpressionSyntax?
        for part in parts {
            let piece: ExpressionSyntax
            switch part {
            case let .text(text):
                piece = ExpressionSyntax(.literal(.string(text)), at: position)
            case let .code(tokens):
                var sub = PipelineParser(tokens: tokens, bytes: bytes, limits: limits)
                sub.depth = depth + 1
                let expression = try sub.parseExpression()
                guard sub.token == .end else {
                    throw sub.error("expected ')' to end the interpolation, found \(sub.token.display)")
                }
                let start = tokens[0].position
                let end = tokens[tokens.count - 1].position.offset
                let text = "string(" + String(decoding: bytes[start.offset..<max(start.offset, end)], as: UTF8.self) + ")"
                piece = ExpressionSyntax(
                    .call("string", [ArgumentSyntax(label: nil, kind: .expression(expression), position: start)], text: text),
                    at: start)
            }
            result = result.map { ExpressionSyntax(.binary(.add, $0, piece), at: position) } ?? piece
        }
        return result ?? ExpressionSyntax(.literal(.string("")), at: position)
    }

    private mutating func parseOr() throws(HubError) -> ExpressionSyntax {
        var left = try parseAnd()
        var levels = 0
        defer { depth -= levels }
        while token == .name("or") {
            try enter()
            levels += 1
            advance()
            let right = try parseAnd()
            left = ExpressionSyntax(.binary(.or, left, right), at: left.position)
        }
        return left
    }

    private mutating func parseAnd() throws(HubError) -> ExpressionSyntax {
        var left = try parseNot()
        var levels = 0
        defer { depth -= levels }
        while token == .name("and") {
            try enter()
            levels += 1
            advance()
            let right = try parseNot()
            left = ExpressionSyntax(.binary(.and, left, right), at: left.position)
        }
        return left
    }

    private mutating func parseNot() throws(HubError) -> ExpressionSyntax {
        guard token == .name("not") else { return try parseComparison() }
        let start = current.position
        try enter()
        defer { depth -= 1 }
        advance()
        return ExpressionSyntax(.not(try parseNot()), at: start)
    }

    private static let comparisons: [String: ExpressionSyntax.BinaryOperator] = [
        "==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]

    private mutating func parseComparison() throws(HubError) -> ExpressionSyntax {
        var left = try parseAdditive()
        var levels = 0
        defer { depth -= levels }
        while case let .symbol(s) = token, let op = Self.comparisons[s] {
            try enter()
            levels += 1
            advance()
            let right = try parseAdditive()
            left = ExpressionSyntax(.binary(op, left, right), at: left.position)
        }
        return left
    }

    private mutating func parseAdditive() throws(HubError) -> ExpressionSyntax {
        var left = try parseMultiplicative()
        var levels = 0
        defer { depth -= levels }
        while isSymbol("+") || isSymbol("-") {
            try enter()
            levels += 1
            let op: ExpressionSyntax.BinaryOperator = isSymbol("+") ? .add : .subtract
            advance()
            let right = try parseMultiplicative()
            left = ExpressionSyntax(.binary(op, left, right), at: left.position)
        }
        return left
    }

    private mutating func parseMultiplicative() throws(HubError) -> ExpressionSyntax {
        var left = try parseUnary()
        var levels = 0
        defer { depth -= levels }
        while isSymbol("*") || isSymbol("/") || isSymbol("%") {
            try enter()
            levels += 1
            let op: ExpressionSyntax.BinaryOperator = isSymbol("*") ? .multiply : isSymbol("/") ? .divide : .remainder
            advance()
            let right = try parseUnary()
            left = ExpressionSyntax(.binary(op, left, right), at: left.position)
        }
        return left
    }

    private mutating func parseUnary() throws(HubError) -> ExpressionSyntax {
        guard isSymbol("-") else { return try parsePostfix() }
        let start = current.position
        try enter()
        defer { depth -= 1 }
        advance()
        let operand = try parseUnary()
        // Fold a negated integer literal so that the most negative Int64 is exact.
        if case let .literal(.int(i)) = operand.kind {
            return ExpressionSyntax(.literal(.int(-i)), at: start)
        }
        if case let .literal(.double(d)) = operand.kind, d == 9_223_372_036_854_775_808, operand.position.offset > start.offset {
            return ExpressionSyntax(.literal(.int(.min)), at: start)
        }
        return ExpressionSyntax(.negate(operand), at: start)
    }

    private mutating func parsePostfix() throws(HubError) -> ExpressionSyntax {
        var base = try parsePrimary()
        var levels = 0
        defer { depth -= levels }
        while true {
            if isSymbol("."), case let .name(name) = peekToken(1), tokens[index + 1].position.offset == current.end,
               current.position.offset == tokens[index - 1].end {
                try enter()
                levels += 1
                advance()
                let at = current.position
                advance()
                base = try fields(name, of: base, at: at)
            } else if isSymbol("[") {
                try enter()
                levels += 1
                advance()
                let subscriptExpression = try parseExpression()
                try expect("]", "expected ']' after index")
                base = ExpressionSyntax(.index(base, subscriptExpression), at: base.position)
            } else {
                return base
            }
        }
    }

    /// `base.a.b` for the dotted name `a.b` (each field is one level of depth).
    private mutating func fields(_ dotted: String, of base: ExpressionSyntax, at position: SourcePosition) throws(HubError) -> ExpressionSyntax {
        var result = base
        var fieldLevels = 0
        for component in dotted.split(separator: ".", omittingEmptySubsequences: false) {
            guard !component.isEmpty else {
                throw PipelineLexer.error("expected a field name after '.'", at: position)
            }
            fieldLevels += 1
            if depth + fieldLevels > limits.maxExpressionDepth {
                throw PipelineLexer.error("nested too deeply (the limit is \(limits.maxExpressionDepth) levels)", at: position)
            }
            result = ExpressionSyntax(.field(result, String(component)), at: base.position)
        }
        return result
    }

    private mutating func parsePrimary() throws(HubError) -> ExpressionSyntax {
        let start = current
        switch start.token {
        case .symbol("."):
            advance()
            let dot = ExpressionSyntax(.current, at: start.position)
            if case let .name(name) = token, current.position.offset == start.end {
                let at = current.position
                advance()
                return try fields(name, of: dot, at: at)
            }
            return dot
        case let .variable(name):
            advance()
            let parts = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            let variable = ExpressionSyntax(.variable(String(parts[0])), at: start.position)
            return parts.count > 1 ? try fields(String(parts[1]), of: variable, at: start.position) : variable
        case let .int(i):
            advance()
            return ExpressionSyntax(.literal(.int(i)), at: start.position)
        case let .double(d):
            advance()
            return ExpressionSyntax(.literal(.double(d)), at: start.position)
        case let .string(s):
            advance()
            return ExpressionSyntax(.literal(.string(s)), at: start.position)
        case let .template(parts):
            advance()
            return try interpolation(parts, at: start.position)
        case .duration:
            throw error("a duration can only be a whole argument")
        case .name("true"):
            advance()
            return ExpressionSyntax(.literal(.bool(true)), at: start.position)
        case .name("false"):
            advance()
            return ExpressionSyntax(.literal(.bool(false)), at: start.position)
        case .name("null"):
            advance()
            return ExpressionSyntax(.literal(.null), at: start.position)
        case let .name(name) where !Self.keywords.contains(name):
            advance()
            if isSymbol("(") {
                advance()
                let arguments = try parseArguments()
                return ExpressionSyntax(.call(name, arguments, text: text(from: start.position.offset)), at: start.position)
            }
            if isSymbol("->") {
                guard !name.contains(".") else { throw PipelineLexer.error("a lambda parameter is a plain name", at: start.position) }
                advance()
                let body = try parseExpression()
                return ExpressionSyntax(.lambda(name, body), at: start.position)
            }
            return ExpressionSyntax(.name(name), at: start.position)
        case .symbol("("):
            advance()
            let inner = try parseExpression()
            if isSymbol("|"), let first = try stage(of: inner) {
                // A pipeline in parentheses: `(page(.next) | map(.items))`.
                var stages = [first]
                while accept("|") { stages.append(try parseStage()) }
                try expect(")", "expected ')' after the pipeline")
                return ExpressionSyntax(.pipeline(PipelineSyntax(stages: stages, position: inner.position)), at: start.position)
            }
            try expect(")", "expected ')' after expression")
            return inner
        case .symbol("["):
            advance()
            var elements: [ExpressionSyntax] = []
            if !accept("]") {
                repeat { elements.append(try parseExpression()) } while accept(",")
                try expect("]", "expected ']' after array elements")
            }
            return ExpressionSyntax(.array(elements), at: start.position)
        case .symbol("{"):
            advance()
            var members: [ExpressionSyntax.ObjectMember] = []
            if !accept("}") {
                repeat {
                    let key: String
                    switch token {
                    case let .name(n): key = n
                    case let .string(s): key = s
                    default: throw error("expected a member name, found \(token.display)")
                    }
                    advance()
                    try expect(":", "expected ':' after member name")
                    members.append(ExpressionSyntax.ObjectMember(key: key, value: try parseExpression()))
                } while accept(",")
                try expect("}", "expected '}' after object members")
            }
            return ExpressionSyntax(.object(members), at: start.position)
        case .end:
            throw error("expected an expression, found end of text")
        default:
            throw error("expected an expression, found \(start.token.display)")
        }
    }
}
