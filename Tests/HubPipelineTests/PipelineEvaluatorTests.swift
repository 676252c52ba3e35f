import HubPipeline
import HubValue
import Testing

@Suite("Pipeline expression evaluator")
struct PipelineEvaluatorTests {
    private let order: Value = [
        "qty": 3, "price": 2.5, "name": "Widget", "tags": ["a", "b"], "nested": ["items": [["id": 7]]], "flag": false,
        "none": nil,
    ]

    private func ok(_ text: String, _ current: Value = .null, acc: Value? = nil) -> Value? {
        if case let .success(v) = pipelineEvaluate(text, current, acc: acc) { return v }
        return nil
    }

    private func fails(_ text: String, _ current: Value = .null) -> String? {
        if case let .failure(f) = pipelineEvaluate(text, current) { return f.message }
        return nil
    }

    @Test func currentValueAndAccessors() {
        #expect(ok(".", 5) == 5)
        #expect(ok(".qty", order) == 3)
        #expect(ok(".nested.items[0].id", order) == 7)
        #expect(ok(".tags[1]", order) == "b")
        #expect(ok(".[0].a", [["a": 1]]) == 1)
        #expect(ok(".[\"qty\"]", order) == 3)
        #expect(ok("$acc.total", 0, acc: ["total": 9]) == 9)
        #expect(ok("[1, 2, 3][1]") == 2)
        #expect(ok("{a: {b: 4}}.a.b") == 4)
    }

    @Test func missingFieldsAndIndexesAreNull() {
        #expect(ok(".missing", order) == .null)
        #expect(ok(".missing.deeper[3]", order) == .null)
        #expect(ok(".tags[9]", order) == .null)
        #expect(ok(".tags[-1]", order) == .null)
        #expect(ok(".[0]", .null) == .null)
        #expect(fails(".a", 1) == "'.a' needs an object, got int")
        #expect(fails(".[0]", "s") == "'[]' needs an array or an object, got string")
        #expect(fails(".[\"x\"]", [1]) == "an array index must be an integer, got string")
        #expect(fails(".[0]", ["a": 1]) == "an object index must be a string, got int")
    }

    @Test func literals() {
        #expect(ok("null") == .null)
        #expect(ok("true") == true)
        #expect(ok("false") == false)
        #expect(ok("9223372036854775807") == .int(.max))
        #expect(ok("1.25") == .double(1.25))
        #expect(ok("1e3") == .double(1000))
        #expect(ok("\"a\\u0041\\n\"") == "aA\n")
        #expect(ok("[1, \"x\", [true], {}]") == [1, "x", [true], [:]])
        #expect(ok("{name: .name, \"quoted key\": 1 + 1}", order) == ["name": "Widget", "quoted key": 2])
    }

    @Test func arithmeticIsExactOnIntegers() {
        #expect(ok("1 + 2 * 3") == 7)
        #expect(ok("(1 + 2) * 3") == 9)
        #expect(ok("10 - 4 - 3") == 3)
        #expect(ok("9007199254740993 + 0") == .int(9_007_199_254_740_993))
        #expect(ok("6 / 3") == .int(2))
        #expect(ok("7 / 2") == .double(3.5))
        #expect(ok("-7 / 2") == .double(-3.5))
        #expect(ok("7.5 / 2.5") == .double(3))
        #expect(ok("7 % 3") == 1)
        #expect(ok("-7 % 3") == -1)
        #expect(ok("7 % -3") == 1)
        #expect(ok("-9223372036854775808 % -1") == 0)
        #expect(ok("1 + 0.5") == .double(1.5))
        #expect(ok(".qty * .price", order) == .double(7.5))
        #expect(ok("-.qty", order) == -3)
        #expect(ok("- -3") == 3)
        #expect(ok("2 * -3") == -6)
    }

    @Test func overflowAndDivisionByZeroFail() {
        #expect(fails("9223372036854775807 + 1") == "integer overflow in '+'")
        #expect(fails("-9223372036854775807 - 2") == "integer overflow in '-'")
        #expect(fails("4611686018427387904 * 2") == "integer overflow in '*'")
        #expect(fails("-9223372036854775808 / -1") == "integer overflow in '/'")
        #expect(fails("-.", .int(.min)) == "integer overflow in unary '-'")
        #expect(fails("1 / 0") == "division by zero")
        #expect(fails("1.5 / 0") == "division by zero")
        #expect(fails("1 % 0") == "division by zero")
        #expect(fails("1e308 * 10") == "number overflow in '*'")
    }

    @Test func typeErrorsNameTheOperatorAndTypes() {
        #expect(fails(".name * .qty", order) == "'*' needs numbers, got string and int")
        #expect(fails("1 + \"a\"") == "'+' needs numbers, two strings or two arrays, got int and string")
        #expect(fails("1.5 % 1") == "'%' needs integers, got float and int")
        #expect(fails("null - 1") == "'-' needs numbers, got null and int")
        #expect(fails("-\"a\"") == "unary '-' needs a number, got string")
        #expect(fails("1 < \"a\"") == "'<' needs two numbers or two strings, got int and string")
        #expect(fails("[1] >= [1]") == "'>=' needs two numbers or two strings, got array and array")
    }

    @Test func joiningStringsAndArrays() {
        #expect(ok("\"ab\" + \"cd\"") == "abcd")
        #expect(ok("[1] + [2, 3]") == [1, 2, 3])
    }

    @Test func comparisons() {
        #expect(ok("1 == 1.0") == true)
        #expect(ok("{a: 1, b: 2} == {b: 2, a: 1}") == true)
        #expect(ok("[1, \"x\"] != [1, \"x\"]") == false)
        #expect(ok("null == null") == true)
        #expect(ok("1 == \"1\"") == false)
        #expect(ok("1 < 1.5") == true)
        #expect(ok("2 <= 2") == true)
        #expect(ok("9223372036854775807 > 9223372036854775806") == true)
        #expect(ok("9007199254740993 > 9007199254740992.0") == true)
        #expect(ok("\"abc\" < \"abd\"") == true)
        #expect(ok("\"b\" >= \"a\"") == true)
        #expect(ok("3 > 2 == true") == true)
    }

    @Test func truthinessAndLogic() {
        #expect(ok("0 ? 1 : 2") == 1)
        #expect(ok("\"\" ? 1 : 2") == 1)
        #expect(ok("[] ? 1 : 2") == 1)
        #expect(ok("null ? 1 : 2") == 2)
        #expect(ok("false ? 1 : 2") == 2)
        #expect(ok("not null") == true)
        #expect(ok("not 0") == false)
        #expect(ok("1 and null") == false)
        #expect(ok("null or 3") == true)
        #expect(ok("false or false") == false)
        // Short-circuit: the right side is not evaluated.
        #expect(ok("false and 1 / 0") == false)
        #expect(ok("true or 1 / 0") == true)
        #expect(ok("true ? 1 : 1 / 0") == 1)
        // not binds looser than comparisons, tighter than and.
        #expect(ok("not 1 == 2 and true") == true)
        // or is looser than and.
        #expect(ok("true or false and false") == true)
        // ?: is right-associative and loosest.
        #expect(ok("false ? 1 : true ? 2 : 3") == 2)
        #expect(ok("1 + 1 == 2 ? \"y\" : \"n\"") == "y")
    }

    @Test func functions() {
        #expect(ok("length(.name)", order) == 6)
        #expect(ok("length(.tags)", order) == 2)
        #expect(ok("length({a: 1})") == 1)
        #expect(ok("abs(-3)") == 3)
        #expect(ok("abs(-2.5)") == .double(2.5))
        #expect(ok("round(2.5)") == 3)
        #expect(ok("floor(-2.5)") == -3)
        #expect(ok("ceil(2.1)") == 3)
        #expect(ok("min(3, 1, 2)") == 1)
        #expect(ok("max([1, 5, 2])") == 5)
        #expect(ok("max(\"a\", \"c\")") == "c")
        #expect(ok("min([])") == .null)
        #expect(ok("sum([1, 2, 3.5])") == .double(6.5))
        #expect(ok("lower(\"AbC\")") == "abc")
        #expect(ok("upper(\"abc\")") == "ABC")
        #expect(ok("trim(\"  x \")") == "x")
        #expect(ok("contains(\"hello\", \"ell\")") == true)
        #expect(ok("contains([1, 2], 2.0)") == true)
        #expect(ok("contains({a: 1}, \"b\")") == false)
        #expect(ok("startsWith(\"medias.x\", \"medias.\")") == true)
        #expect(ok("endsWith(\"a.json\", \".json\")") == true)
        #expect(ok("split(\"a,b\", \",\")") == ["a", "b"])
        #expect(ok("join([\"a\", \"b\"], \"-\")") == "a-b")
        #expect(ok("string(12)") == "12")
        #expect(ok("string({a: [1]})") == "{\"a\":[1]}")
        #expect(ok("number(\"12\")") == 12)
        #expect(ok("number(\"1.5\")") == .double(1.5))
        #expect(ok("number(\"x\")") == .null)
        #expect(ok("keys({a: 1, b: 2})") == ["a", "b"])
        #expect(ok("values({a: 1, b: 2})") == [1, 2])
        #expect(ok("merge({a: 1, b: 1}, {b: 2})") == ["a": 1, "b": 2])
        #expect(ok("set(., \"qty\", 4).qty", order) == 4)
        #expect(ok("set([1, 2], 0, 9)") == [9, 2])
        #expect(ok("append([1], 2, 3)") == [1, 2, 3])
        #expect(ok("map(.tags, t -> upper(t))", order) == ["A", "B"])
        #expect(ok("map([1, 2], . * 2)") == [2, 4])
        #expect(ok("filter([1, 2, 3, 4], x -> x % 2 == 0)") == [2, 4])
        #expect(ok("filter([{a: 1}, {a: 5}], .a > 2)") == [["a": 5]])
        #expect(ok("map([[1, 2], [3]], xs -> map(xs, x -> x + length(xs)))") == [[3, 4], [4]])
        #expect(ok("type(1.5)") == "float")
        #expect(ok("coalesce(null, .missing, 3)", order) == 3)
        #expect(ok("if(.flag, 1, 2)", order) == 2)
        #expect(ok("slice([1, 2, 3, 4], 1, 3)") == [2, 3])
        #expect(ok("slice(\"hello\", -3)") == "llo")
        #expect(ok("now()") == 0)
        #expect(ok("\"n=\" + string(.qty)", order) == "n=3")
    }

    @Test func functionFailures() {
        #expect(fails("length(1)") == "length needs a string, an array or an object, got int")
        #expect(fails("upper(1)") == "upper needs a string, got int")
        #expect(fails("join([1], \",\")") == "join needs an array of strings, found int")
        #expect(fails("min(1, \"a\")") == "min needs numbers or strings, got int and string")
        #expect(fails("map(1, . * 2)") == "map needs an array as its first argument")
        #expect(fails("map([\"a\"], . * 2)") == "'*' needs numbers, got string and int")
        #expect(fails("abs(-9223372036854775808)") == "integer overflow in abs")
        #expect(fails("set([1], 5, 0)") == "set: index out of range")
    }

    @Test func runawayNestedLambdasHitTheStepBudget() throws {
        let big = Value.array((0..<100).map { .int(Int64($0)) })
        let runaway = try? pipelineExpression("map(., x -> map(., y -> map(., z -> z)))")
        let fine = try? pipelineExpression("length(map(., x -> x + 1))")
        guard let runaway, let fine else {
            Issue.record("parse failed")
            return
        }
        #expect(throws: ExpressionEvaluator.Failure.self) {
            try ExpressionEvaluator(current: big, maximumSteps: 50_000).evaluate(runaway)
        }
        #expect(try ExpressionEvaluator(current: big, maximumSteps: 50_000).evaluate(fine) == 100)
    }

    @Test func failurePositionPointsAtTheFailingExpression() throws {
        let e = try pipelineExpression(".a + (.b * .c)")
        #expect(throws: ExpressionEvaluator.Failure("'*' needs numbers, got string and int", at: SourcePosition(line: 1, column: 15, offset: 14))) {
            try ExpressionEvaluator.evaluate(e, current: ["a": 1, "b": "x", "c": 2])
        }
    }
}
