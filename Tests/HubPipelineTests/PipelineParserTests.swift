import HubPipeline
import HubValue
import Testing

@Suite("Pipeline lexer and parser")
struct PipelineParserTests {
    private func tokens(_ text: String) throws -> [PipelineLexer.Token] {
        try PipelineLexer.tokenize(text).map(\.token)
    }

    @Test func lexesNamesNumbersStringsDurationsAndSymbols() throws {
        #expect(try tokens("orders.eu | map(.a)") == [
            .name("orders.eu"), .symbol("|"), .name("map"), .symbol("("), .symbol("."), .name("a"), .symbol(")"), .end,
        ])
        #expect(try tokens("42 -7 1.5 2e3 9223372036854775807 9223372036854775808") == [
            .int(42), .symbol("-"), .int(7), .double(1.5), .double(2000), .int(.max), .double(9_223_372_036_854_775_808), .end,
        ])
        #expect(try tokens("250ms 2s 1m 1.5s 100us 3ns 1h") == [
            .duration(.milliseconds(250)), .duration(.seconds(2)), .duration(.seconds(60)), .duration(.milliseconds(1500)),
            .duration(.microseconds(100)), .duration(.nanoseconds(3)), .duration(.seconds(3600)), .end,
        ])
        #expect(try tokens(#""a\"b\\c\/\n\t\u00e9\ud83d\ude00""#) == [.string("a\"b\\c/\n\té😀"), .end])
        #expect(try tokens("== != <= >= < > -> ? : $acc %") == [
            .symbol("=="), .symbol("!="), .symbol("<="), .symbol(">="), .symbol("<"), .symbol(">"), .symbol("->"),
            .symbol("?"), .symbol(":"), .variable("acc"), .symbol("%"), .end,
        ])
    }

    @Test func tokenPositionsAreOneBasedLinesAndColumns() throws {
        let located = try PipelineLexer.tokenize("a\n  | \"é\" b")
        #expect(located.map(\.position.description) == ["1:1", "2:3", "2:5", "2:9", "2:10"])
    }

    @Test(arguments: [
        ("a | map(.x", "1:11: expected ')' after argument list, found end of text"),
        ("a | map(.x .y)", "1:12: expected ')' after argument list, found '.'"),
        ("a | map(.x))", "1:12: unexpected ')' (no matching '(')"),
        ("a b", "1:3: expected '|' or end of text, found 'b'"),
        ("| a", "1:1: expected a stage name, found '|'"),
        ("a |", "1:4: expected a stage name, found end of text"),
        ("true", "1:1: expected a stage name, found 'true'"),
        ("a | map()", ""),
        ("a | map(1 +)", "1:12: expected an expression, found ')'"),
        ("a | map(.x = 1)", "1:12: unexpected '=' (use '==' to compare)"),
        ("a | map(!.x)", "1:9: unexpected '!' (use 'not' or '!=')"),
        ("a | map('x')", "1:9: strings use double quotes"),
        ("a | map(\"abc)", "1:9: unterminated string"),
        ("a | map(\"\\q\")", "1:10: invalid escape '\\q' in string"),
        ("a | map(\"\\u12\")", "1:10: invalid \\u escape"),
        ("a | map(\"\\ud800\")", "1:10: unpaired surrogate in \\u escape"),
        ("a | map(01)", "1:9: a number cannot start with 0"),
        ("a | delay(5 ms)", "1:13: expected ')' after argument list, found 'ms'"),
        ("a | delay(5days)", "1:11: unknown duration unit 'days' (use ns, us, ms, s, m or h)"),
        ("a | map(1s + 1)", "1:9: a duration can only be a whole argument"),
        ("a | map(.x ? 1)", "1:15: expected ':' in conditional expression, found ')'"),
        ("a | map([1, 2)", "1:14: expected ']' after array elements, found ')'"),
        ("a | map({a 1})", "1:12: expected ':' after member name, found '1'"),
        ("a | map({1: 1})", "1:10: expected a member name, found '1'"),
        ("a | map({a: 1)", "1:14: expected '}' after object members, found ')'"),
        ("a | map(.[1)", "1:12: expected ']' after index, found ')'"),
        ("a | map((1)", "1:12: expected ')' after argument list, found end of text"),
        ("a | map((1 2))", "1:12: expected ')' after expression, found '2'"),
        ("a | map($)", "1:9: expected a variable name after '$'"),
        ("a | map(#)", "1:9: unexpected character '#'"),
        ("a | merge(1 | b)", "1:11: only a stage can start a pipeline before '|'"),
        ("a | map(.a.)", "1:10: expected a field name after '.'"),
        ("a | delay(5ms2)", "1:11: unexpected '2' after duration"),
        ("a | delay(1e30s)", "1:11: duration too long"),
        ("a | map(1e400)", "1:9: number out of range"),
        ("a | map(\"a\tb\")", "1:11: control character in string (escape it)"),
        ("a | map(\"\\udc00\")", "1:10: unpaired surrogate in \\u escape"),
        ("a | map(x.y -> 1)", "1:9: a lambda parameter is a plain name"),
        ("a | map(", "1:9: expected an expression, found end of text"),
        ("a | map(1,)", "1:11: expected an expression, found ')'"),
    ])
    func syntaxErrorsNameLineAndColumn(text: String, message: String) {
        let error = pipelineError { _ = try PipelineCompiler.parse(text) }
        if message.isEmpty {
            #expect(error == nil)
            return
        }
        #expect(error?.code == .pipelineError)
        #expect(error?.message == message)
        let parts = message.split(separator: ":").prefix(2).compactMap { Int64($0) }
        #expect(error?.data == Value.object(["line": .int(parts[0]), "column": .int(parts[1])]))
    }

    @Test func errorsOnLaterLinesCountLines() {
        let error = pipelineError { _ = try PipelineCompiler.parse("orders\n| filter(.qty >\n  )") }
        #expect(error?.message == "3:3: expected an expression, found ')'")
        #expect(error?.data == Value.object(["line": 3, "column": 3]))
    }

    @Test func parsesStagesArgumentsAndPositions() throws {
        let syntax = try PipelineCompiler.parse("orders | filter(.qty > 100) | debounce(250ms) | merge(a | map(.), b)")
        #expect(syntax.stages.map(\.name) == ["orders", "filter", "debounce", "merge"])
        #expect(syntax.stages[0].arguments == nil)
        #expect(syntax.stages[1].position.description == "1:10")
        #expect(syntax.stages[1].text == "filter(.qty > 100)")
        #expect(syntax.stages[2].arguments?.first?.kind == .duration(.milliseconds(250)))
        guard case let .pipeline(inner)? = syntax.stages[3].arguments?.first?.kind else {
            Issue.record("expected a pipeline argument")
            return
        }
        #expect(inner.stages.map(\.name) == ["a", "map"])
        guard case let .expression(b)? = syntax.stages[3].arguments?.last?.kind else {
            Issue.record("expected an expression argument")
            return
        }
        #expect(b.kind == .name("b"))
    }

    @Test func labelsAndLambdas() throws {
        let syntax = try PipelineCompiler.parse("a | first(where: .x > 1) | map(map(.items, x -> x * 2))")
        #expect(syntax.stages[1].arguments?.first?.label == "where")
        guard case let .expression(e)? = syntax.stages[2].arguments?.first?.kind,
              case let .call("map", arguments, _) = e.kind,
              case let .expression(lambda) = arguments[1].kind,
              case let .lambda(parameter, _) = lambda.kind
        else {
            Issue.record("expected a lambda")
            return
        }
        #expect(parameter == "x")
    }

    @Test func precedenceShapesTheTree() throws {
        // 1 + 2 * 3 == 7 and not false ? "y" : "n"
        let e = try pipelineExpression("1 + 2 * 3 == 7 and not false ? \"y\" : \"n\"")
        guard case let .conditional(condition, _, _) = e.kind,
              case let .binary(.and, comparison, negation) = condition.kind,
              case let .binary(.equal, sum, _) = comparison.kind,
              case let .binary(.add, _, product) = sum.kind,
              case .binary(.multiply, _, _) = product.kind,
              case .not = negation.kind
        else {
            Issue.record("unexpected tree \(e)")
            return
        }
        // Accessors bind tighter than unary minus: -.a.b[0]
        let negated = try pipelineExpression("-.a.b[0]")
        guard case let .negate(inner) = negated.kind, case let .index(base, _) = inner.kind,
              case let .field(a, "b") = base.kind, case let .field(current, "a") = a.kind, case .current = current.kind
        else {
            Issue.record("unexpected tree \(negated)")
            return
        }
        // Right-associative conditional
        let nested = try pipelineExpression("true ? 1 : false ? 2 : 3")
        guard case let .conditional(_, _, otherwise) = nested.kind, case .conditional = otherwise.kind else {
            Issue.record("conditional should be right-associative")
            return
        }
    }

    @Test func dotFollowedBySpaceIsTheCurrentValue() throws {
        let e = try pipelineExpression(". and .and")
        guard case let .binary(.and, l, r) = e.kind, case .current = l.kind, case .field(_, "and") = r.kind else {
            Issue.record("unexpected tree \(e)")
            return
        }
    }

    @Test func mostNegativeIntegerIsExact() throws {
        let e = try pipelineExpression("-9223372036854775808")
        #expect(e.kind == .literal(.int(.min)))
    }

    @Test func limitsGivePipelineErrorsNotCrashes() {
        let limits = PipelineLimits(maxSourceLength: 100, maxStages: 3, maxExpressionDepth: 8)
        let long = pipelineError { _ = try PipelineCompiler.parse(String(repeating: "a", count: 101), limits: limits) }
        #expect(long?.message == "1:1: pipeline text is 101 bytes, more than the limit of 100")
        let stages = pipelineError { _ = try PipelineCompiler.parse("a | first() | last() | count()", limits: limits) }
        #expect(stages?.message == "1:24: too many stages (the limit is 3)")
        let deep = pipelineError { _ = try PipelineCompiler.parse("a | map(((((((((1)))))))))", limits: limits) }
        #expect(deep?.code == .pipelineError)
        #expect(deep?.message.contains("nested too deeply (the limit is 8 levels)") == true)
        let minus = pipelineError { _ = try PipelineCompiler.parse("a | map(--------1)", limits: limits) }
        #expect(minus?.message.contains("nested too deeply") == true)
        // Flat chains build trees as deep as they are long: they count too.
        #expect(pipelineError { _ = try PipelineCompiler.parse("a | map(1 + 1 + 1 + 1 + 1)", limits: limits) } == nil)
        let sum = pipelineError { _ = try PipelineCompiler.parse("a | map(1" + String(repeating: " + 1", count: 8) + ")", limits: limits) }
        #expect(sum?.message.contains("nested too deeply") == true)
        let fields = pipelineError { _ = try PipelineCompiler.parse("a | map(.a.b.c.d.e.f.g.h.i)", limits: limits) }
        #expect(fields?.message.contains("nested too deeply") == true)
    }

    @Test func defaultDepthAdmitsThirtyChainedOperatorsInAStageArgument() {
        #expect(pipelineError { _ = try PipelineCompiler.parse("a | map(1" + String(repeating: " + 1", count: 30) + ")") } == nil)
        let error = pipelineError { _ = try PipelineCompiler.parse("a | map(1" + String(repeating: " + 1", count: 31) + ")") }
        #expect(error?.message == "1:131: nested too deeply (the limit is 32 levels)")
    }

    @Test func hostileNestingWithDefaultLimitsIsRejected() {
        for text in [
            "a | map(" + String(repeating: "(", count: 20_000) + "1" + String(repeating: ")", count: 20_000) + ")",
            "a | map(" + String(repeating: "-", count: 15_000) + "1)",
            "a | map(" + String(repeating: "not ", count: 4000) + "1)",
            "a | map(" + String(repeating: "[", count: 15_000) + ")",
            "a | map(" + String(repeating: "{a:", count: 5000) + ")",
            String(repeating: "merge(", count: 5000),
            "a | map(" + String(repeating: "1 ? ", count: 5000) + "1)",
            "a | map(1" + String(repeating: " + 1", count: 20_000) + ")",
            "a | map(1" + String(repeating: " * 1", count: 20_000) + ")",
            "a | map(1" + String(repeating: " == 1", count: 20_000) + ")",
            "a | map(1" + String(repeating: " and 1", count: 20_000) + ")",
            "a | map(1" + String(repeating: " or 1", count: 20_000) + ")",
            "a | map(." + String(repeating: "a.", count: 20_000) + "a)",
            "a | map(.a" + String(repeating: "[0]", count: 20_000) + ")",
            "a | map($acc" + String(repeating: ".b", count: 20_000) + ")",
        ] {
            let error = pipelineError { _ = try PipelineCompiler.parse(text, limits: PipelineLimits(maxSourceLength: 1 << 20)) }
            #expect(error?.code == .pipelineError)
            #expect(error?.message.contains("nested too deeply") == true, "\(text.prefix(20))")
        }
    }
}
