import HubEngine
import HubPipeline
import HubValue
import HubWire
import Testing

/// String interpolation, regular expressions, formatting and sorting in expressions, and the
/// operators `sort`, `withLatestFrom` and `retry()`.
@Suite("Pipeline text functions and the operators they come with")
struct PipelineTextFunctionTests {
    private func ok(_ text: String, _ current: Value = .null) -> Value? {
        if case let .success(v) = pipelineEvaluate(text, current) { return v }
        return nil
    }

    private func fails(_ text: String, _ current: Value = .null) -> String? {
        if case let .failure(f) = pipelineEvaluate(text, current) { return f.message }
        return nil
    }

    // MARK: interpolation

    @Test func stringInterpolation() {
        let order: Value = ["id": 42, "state": "shipped", "items": [1, 2], "price": 9.5, "note": nil]
        #expect(ok(#""order \(.id): \(.state)""#, order) == "order 42: shipped")
        #expect(ok(#""\(.id)""#, order) == "42")
        #expect(ok(#""\(.items) at \(.price), \(.note)""#, order) == "[1,2] at 9.5, null")
        #expect(ok(#""total \(.price + 1) for \(length(.items)) items""#, order) == "total 10.5 for 2 items")
        #expect(ok(#""nested \("inner \(.id)")!""#, order) == "nested inner 42!")
        #expect(ok(#""a (b) \\(c)""#) == #"a (b) \(c)"#, "an escaped backslash is not an interpolation")
        #expect(ok(#""\(.state == "shipped" ? "done" : "pending")""#, order) == "done")
    }

    @Test func interpolationErrorsArePipelineErrors() throws {
        let env = PipelineTestEnvironment()
        for (text, message) in [
            (#"just("\(")"#, "1:9: unterminated string"),
            (#"just("\(1"#, #"1:7: unterminated interpolation '\(' in string"#),
            (#"just("\()")"#, #"1:7: empty interpolation '\()' in string"#),
            (#"just("\(1 2)")"#, "1:11: expected ')' to end the interpolation, found '2'"),
            (#"just("\(qty)")"#, "1:9: unknown name 'qty' (fields are written '.qty')"),
        ] {
            #expect(throws: HubError.self, "\(text)") { try env.compile(text) }
            do {
                _ = try env.compile(text)
            } catch {
                #expect(error.message == message, "\(text)")
            }
        }
    }

    // MARK: regular expressions

    @Test func regularExpressions() {
        #expect(ok(#"matches("order-123", "^order-\\d+$")"#) == true)
        #expect(ok(#"matches("order-12x", "^order-\\d+$")"#) == false)
        #expect(ok(#"match("on 2026-11-23", "(\\d{4})-(\\d{2})-(\\d{2})")"#) == ["2026-11-23", "2026", "11", "23"])
        #expect(ok(#"match("abc", "x(y)?")"#) == .null)
        #expect(ok(#"match("ac", "a(b)?c")"#) == ["ac", nil])
        #expect(ok(#"replace("a-b-c", "-", "+")"#) == "a+b+c")
        #expect(ok(#"replace("John Smith", "(\\w+) (\\w+)", "$2, $1 ($$)")"#) == "Smith, John ($)")
        #expect(ok(#"replace("abc", "x*", "-")"#) == "-a-b-c-")
        #expect(fails(#"matches(1, "a")"#) == "matches needs a string and a pattern (a string), got int and string")
        #expect(fails(#"matches("a", "(a)\\1")"#)
                == "matches: invalid pattern: backreferences are not supported (they cannot be matched in linear time) (at character 4 of the pattern)")
    }

    @Test func aCatastrophicPatternRunsInItsStepBudget() {
        let long = String(repeating: "a", count: 30_000)
        #expect(ok(#"matches(., "(a*)*b")"#, .string(long)) == false, "linear: well inside the evaluation's 1,000,000 steps")
        let longer = String(repeating: "a", count: 200_000)
        #expect(fails(#"matches(., "(a*)*b")"#, .string(longer)) == "the expression took too many steps")
    }

    @Test func aConstantPatternIsCheckedWhenThePipelineCompiles() {
        let env = PipelineTestEnvironment()
        #expect(throws: HubError(.pipelineError, "1:24: matches: invalid pattern: lookaround assertions are not supported (they cannot be matched in linear time) (at character 2 of the pattern)",
                                 data: ["line": 1, "column": 24])) {
            try env.compile(#"a | filter(matches(.s, "a(?=b)"))"#)
        }
    }

    // MARK: formatting

    @Test func numberAndCurrencyFormatting() {
        #expect(ok("formatNumber(1234567)") == "1,234,567")
        #expect(ok("formatNumber(1234.5678)") == "1,234.5678")
        #expect(ok("formatNumber(1234.5678, 2)") == "1,234.57")
        #expect(ok("formatNumber(1234, 2)") == "1,234.00")
        #expect(ok(#"formatNumber(1234.5, 1, "de_DE")"#) == "1.234,5")
        #expect(ok(#"formatCurrency(1234.5, "USD")"#) == "$1,234.50")
        #expect(ok(#"formatCurrency(-12.05, "USD")"#) == "-$12.05")
        #expect(ok(#"formatCurrency(2000000000000, "USD")"#) == "$2,000,000,000,000.00")
        #expect(ok(#"formatCurrency(1234.5, "EUR", "de_DE")"#) == "1.234,50\u{A0}€")
        #expect(fails(#"formatCurrency(1, "usd")"#) == #"formatCurrency needs an ISO 4217 currency code such as "USD", got "usd""#)
        #expect(fails("formatNumber(1, 21)") == "formatNumber needs a number of decimals from 0 to 20, got 21")
        #expect(fails(#"formatNumber("1")"#) == "formatNumber needs a number, got string")
    }

    @Test func dateFormattingFromEpochMilliseconds() {
        #expect(ok("formatDate(0)") == "1970-01-01T00:00:00.000Z")
        #expect(ok("formatDate(1700000000123)") == "2023-11-14T22:13:20.123Z")
        #expect(ok("formatDate(-1)") == "1969-12-31T23:59:59.999Z")
        #expect(ok("formatDate(951782400000)") == "2000-02-29T00:00:00.000Z")
        #expect(ok(#"formatDate(1700000000123, "yyyy-MM-dd HH:mm:ss.SSS")"#) == "2023-11-14 22:13:20.123")
        #expect(ok(#"formatDate(1700000000123, "EEE d MMM yyyy, HH:mm", "Europe/Paris")"#) == "Tue 14 Nov 2023, 23:13")
        #expect(ok(#"formatDate(1700000000123, "EEEE d MMMM", "Europe/Paris", "fr_FR")"#) == "mardi 14 novembre")
        #expect(fails(#"formatDate(0, "yyyy", "Mars/Olympus")"#)
                == #"formatDate: unknown time zone "Mars/Olympus" (use an IANA name such as "Europe/Paris")"#)
        #expect(fails("formatDate(253402300800000)") == "formatDate: 253402300800000 is outside the years 1 to 9999")
        #expect(fails(#"formatDate("today")"#) == "formatDate needs milliseconds since the Unix epoch (a number), got string")
    }

    // MARK: sorting

    @Test func sortFunction() {
        #expect(ok("sort([3, 1, 2])") == [1, 2, 3])
        #expect(ok(#"sort(["b", "a", "C"])"#) == ["C", "a", "b"])
        let todos: Value = ["todos": [["title": "b", "id": 1], ["title": "a", "id": 2], ["title": "b", "id": 3]]]
        #expect(ok("sort(.todos, t -> t.title)", todos) == [["title": "a", "id": 2], ["title": "b", "id": 1], ["title": "b", "id": 3]],
                "by key, stable")
        #expect(ok("sort([{p: 2}, {p: 1}], .p)") == [["p": 1], ["p": 2]])
        #expect(ok("sort([])") == [])
        #expect(fails(#"sort([1, "a"])"#) == "sort needs numbers or strings to compare, got string and int"
                || fails(#"sort([1, "a"])"#) == "sort needs numbers or strings to compare, got int and string")
    }

    @Test(arguments: [
        ("sequence([3, 1, 2]) | sort()", [[1, 2, 3]]),
        ("sequence([{p: 2, i: 0}, {p: 1, i: 1}, {p: 2, i: 2}]) | sort(by: $a.p < $b.p) | map(map(., x -> x.i))", [[1, 0, 2]]),
        ("sequence([{p: 2}, {p: 1}]) | sort(by: $a.p > $b.p) | map(map(., x -> x.p))", [[2, 1]]),
        ("empty() | sort()", [[]]),
    ] as [(String, [Value])])
    func sortOperator(text: String, expected: [Value]) throws {
        let env = PipelineTestEnvironment()
        let r = try env.run(text)
        #expect(r.events == [.subscription] + expected.map { .value($0) } + [.finished], "\(text)")
    }

    @Test func sortOperatorFailsOnValuesThatCannotBeCompared() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run(#"sequence([1, "a"]) | sort()"#)
        guard case let .failure(error)? = r.events.last else {
            Issue.record("expected a failure, got \(r.events)")
            return
        }
        #expect(error.code == .failed)
        #expect(error.message.hasPrefix("sort(): cannot compare"))
    }

    // MARK: withLatestFrom and retry()

    @Test func withLatestFromPairsEachValueWithTheLatestOfAnother() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | withLatestFrom(b | map(. * 10))")
        env["a"].send(1)
        env["b"].send(2)
        env["b"].send(3)
        env["a"].send(4)
        env["a"].send(5)
        #expect(r.values == [[4, 30], [5, 30]])
    }

    @Test func retryWithoutACountWaitsOnTheSchedulerBetweenAttempts() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | retry()")
        env["a"].send(1)
        env["a"].send(completion: .failure(.failed("x")))
        #expect(r.values == [1])
        // The subject failed for good: every attempt fails at once; virtual time shows the waits.
        #expect(env.testScheduler.pendingActionCount == 1)
        env.testScheduler.advance(by: .milliseconds(100))
        #expect(env.testScheduler.pendingActionCount == 1, "failed again, waiting 200 ms now")
        env.testScheduler.advance(by: .seconds(60))
        #expect(!r.isCompleted, "retry() never gives up")
        r.cancel()
        #expect(env.testScheduler.pendingActionCount == 0)
    }

    @Test func retryBackoffArgument() throws {
        let env = PipelineTestEnvironment()
        #expect(throws: HubError.self) { try env.compile("a | retry(backoff: 1ms)") }
        let r = try env.run("fail(1) | retry(backoff: 1s)")
        #expect(env.testScheduler.pendingActionCount == 1)
        env.testScheduler.advance(by: .milliseconds(999))
        #expect(r.events == [.subscription])
    }
}

/// Choosing a pipeline by condition inside `flatMap` and `switchToLatest` (the seed's
/// `if let next = result.next { ... } else { Just(result) }`).
@Suite("Pipelines chosen by condition")
struct PipelineConditionalTests {
    @Test(arguments: [
        ("sequence([1, 2, 3]) | flatMap(. % 2 == 0 ? just(. * 10) : (sequence([., .]) | map(. + 100)))", [101, 101, 20, 103, 103]),
        ("sequence([{next: 2}, {next: null}]) | flatMap(.next != null ? (sequence([.next, .next]) | map(. * 3)) : just(\"last\"))",
         [6, 6, "last"]),
        ("just(5) | switchToLatest(. > 3 ? (. > 4 ? just(\"big\") : just(\"medium\")) : empty())", ["big"]),
        ("sequence([1, 2]) | flatMap(. == 1 ? empty() : just(.))", [2]),
    ] as [(String, [Value])])
    func aConditionChoosesThePipelineBuiltForEachValue(text: String, expected: [Value]) throws {
        let env = PipelineTestEnvironment()
        let r = try env.run(text)
        #expect(r.events == [.subscription] + expected.map { .value($0) } + [.finished], "\(text)")
    }

    @Test func aPipelineInParenthesesIsOnlyValidWhereAPipelineIsExpected() {
        let env = PipelineTestEnvironment()
        #expect(throws: HubError(.pipelineError, "1:9: a pipeline in parentheses is only valid where a pipeline is expected",
                                 data: ["line": 1, "column": 9])) {
            try env.compile("a | map((b | first()))")
        }
        #expect(throws: HubError(.pipelineError, "1:17: flatMap expects a pipeline here", data: ["line": 1, "column": 17])) {
            try env.compile("a | flatMap(. ? 1 : just(2))")
        }
        #expect(throws: HubError.self) { try env.compile("a | flatMap(.x ? nosuch(1) : just(2))") }
    }
}
