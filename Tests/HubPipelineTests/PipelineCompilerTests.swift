import HubPipeline
import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

@Suite("Pipeline compiler")
struct PipelineCompilerTests {
    typealias Event = RecordedEvent<Value, HubError>

    @Test func theProtocolExample() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("orders | filter(.qty > 100) | map(.qty * .price) | scan(0, $acc + .)")
        env["orders"].send(["qty": 150, "price": 2])
        env["orders"].send(["qty": 50, "price": 100])
        env["orders"].send(["qty": 200, "price": 1.5])
        env["orders"].send(completion: .finished)
        #expect(r.events == [.subscription, .value(300), .value(.double(600)), .finished])
        #expect(env.requestedNames == ["orders"])
    }

    @Test func coldSources() throws {
        let env = PipelineTestEnvironment()
        #expect(try env.run("just({a: 1 + 1})").events == [.subscription, .value(["a": 2]), .finished])
        #expect(try env.run("sequence([1, \"x\", null])").events == [.subscription, .value(1), .value("x"), .value(.null), .finished])
        #expect(try env.run("empty()").events == [.subscription, .finished])
        #expect(try env.run("fail({reason: \"no\"})").events == [.subscription, .failure(HubError.failed(["reason": "no"]))])
    }

    @Test func sequenceProducesOnlyWhatIsDemanded() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("sequence([1, 2, 3, 4])", demand: .max(2))
        #expect(r.events == [.subscription, .value(1), .value(2)])
        r.request(.max(5))
        #expect(r.events == [.subscription, .value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func doublingAccumulatorsFailInsteadOfExhaustingMemory() throws {
        let env = PipelineTestEnvironment()
        let strings = try env.run("numbers | scan(\"xxxxxxxxxxxxxxxx\", $acc + $acc) | map(length(.))")
        let arrays = try env.run("numbers | scan([0], $acc + $acc) | map(length(.))")
        // The last value that fits in maxValueBytes (16 MiB, each value's own bytes counted
        // too), then the value built next is refused.
        #expect(strings.values.last == .int(Int64(ExpressionEvaluator.maximumStringBytes / 2)))
        #expect(strings.events.last == .failure(HubError(
            .limitExceeded, "scan(\"xxxxxxxxxxxxxxxx\", $acc + $acc): the value built is larger than 16777216 bytes",
            data: ["stage": "scan(\"xxxxxxxxxxxxxxxx\", $acc + $acc)", "limit": "maxValueBytes", "value": 16777216])))
        #expect(arrays.values.last == .int(Int64(ExpressionEvaluator.maximumArrayCount / 2)))
        guard case let .failure(error)? = arrays.events.last else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .limitExceeded)
        #expect(error.message.hasSuffix("the value built is larger than 16777216 bytes"))
        // Without the value bound, the operators' own limits still hold.
        var limits = PipelineLimits()
        limits.maxValueBytes = .max
        let unbounded = PipelineTestEnvironment()
        unbounded.limits = limits
        let longStrings = try unbounded.run("numbers | scan(\"xxxxxxxxxxxxxxxx\", $acc + $acc) | map(length(.))")
        #expect(longStrings.values.last == .int(Int64(ExpressionEvaluator.maximumStringBytes)))
        guard case let .failure(stringError)? = longStrings.events.last else {
            Issue.record("expected a failure")
            return
        }
        #expect(stringError.message.hasSuffix("'+' would make a string longer than 16777216 bytes"))
    }

    @Test func timerTicksAndSkipsTicksWithoutDemand() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("timer(100ms)", demand: .max(1))
        env.testScheduler.advance(by: .milliseconds(250))
        #expect(r.values == [0])
        r.request(.max(2))
        env.testScheduler.advance(by: .milliseconds(250))
        #expect(r.values == [0, 2, 3])
        r.cancel()
        env.testScheduler.advance(by: .seconds(1))
        #expect(r.values == [0, 2, 3])
        #expect(env.testScheduler.isIdle)
    }

    @Test func timingArgumentsRespectTheMinimumInterval() {
        let env = PipelineTestEnvironment()
        for (text, column) in [("timer(5ms)", 7), ("a | debounce(1ms)", 14), ("a | throttle(9ms)", 14), ("a | delay(100us)", 11)] {
            let error = pipelineError { _ = try env.compile(text) }
            #expect(error?.code == .pipelineError)
            #expect(error?.message.hasPrefix("1:\(column): ") == true)
            #expect(error?.message.contains("shorter than the minimum of 10ms") == true)
        }
        #expect(pipelineError { _ = try env.compile("timer(10ms)") } == nil)
    }

    @Test func triggers() throws {
        let env = PipelineTestEnvironment()
        let all = try env.run("trigger(refresh)")
        let keyed = try env.run("trigger(\"refresh\", \"eu\")")
        env.activate("refresh")
        env.activate("refresh", key: "eu")
        env.activate("refresh", key: "us")
        #expect(all.values == [.null, "eu", "us"])
        #expect(keyed.values == ["eu"])
    }

    @Test func combiningSources() throws {
        let env = PipelineTestEnvironment()
        let merged = try env.run("merge(a, b | map(. * 10))")
        let latest = try env.run("combineLatest(a, b)")
        let zipped = try env.run("zip(a, b, c)")
        env["a"].send(1)
        env["b"].send(2)
        env["a"].send(3)
        env["c"].send(4)
        env["b"].send(5)
        #expect(merged.values == [1, 20, 3, 50])
        #expect(latest.values == [[1, 2], [3, 2], [3, 5]])
        #expect(zipped.values == [[1, 2, 4]])
    }

    @Test func combiningMoreThanFourSources() throws {
        let env = PipelineTestEnvironment()
        let latest = try env.run("combineLatest(just(1), just(2), just(3), just(4), just(5))")
        let zipped = try env.run("zip(sequence([1, 2]), sequence([3, 4]), just(5), just(6), sequence([7, 8]))")
        #expect(latest.events == [.subscription, .value([1, 2, 3, 4, 5]), .finished])
        #expect(zipped.events == [.subscription, .value([1, 3, 5, 6, 7]), .finished])
    }

    @Test(arguments: [
        ("sequence([1, 2, 3, 4]) | map(. * 2)", [2, 4, 6, 8]),
        ("sequence([1, 2, 3, 4]) | filter(. % 2 == 0)", [2, 4]),
        ("sequence([{a: 1}, {}, {a: 3}]) | compactMap(.a)", [1, 3]),
        ("sequence([1, 2, 3]) | scan(10, $acc + .)", [11, 13, 16]),
        ("sequence([1, 2, 3]) | reduce([], $acc + [.])", [[1, 2, 3]]),
        ("sequence([1, 1, 2, 2, 1]) | removeDuplicates()", [1, 2, 1]),
        ("sequence([1, 2, 3]) | prefix(2)", [1, 2]),
        ("sequence([1, 2, 3]) | drop(2)", [3]),
        ("sequence([1, 2, 3]) | first()", [1]),
        ("sequence([1, 2, 3]) | last()", [3]),
        ("sequence([1, 2, 3, 4, 5]) | collect(2)", [[1, 2], [3, 4], [5]]),
        ("sequence([1, 2]) | prepend(-1, 0)", [-1, 0, 1, 2]),
        ("fail(1) | replaceError(\"r\")", ["r"]),
        ("empty() | first()", []),
    ] as [(String, [Value])])
    func coreOperators(text: String, expected: [Value]) throws {
        let env = PipelineTestEnvironment()
        let r = try env.run(text)
        #expect(r.events == [.subscription] + expected.map { .value($0) } + [.finished])
    }

    @Test func retryResubscribes() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | retry(2)")
        env["a"].send(1)
        env["a"].send(completion: .failure(HubError.failed("x")))
        // The subject has finished: resubscribing gets its failure again, up to 2 retries.
        #expect(r.events == [.subscription, .value(1), .failure(HubError.failed("x"))])
        let counted = try env.run("numbers | prefix(2) | map(. > 0 ? 1 / 0 : .) | retry(2)")
        #expect(counted.values == [0, 0, 0])
        #expect(counted.events.last == .failure(HubError(
            .failed, "map(. > 0 ? 1 / 0 : .): division by zero",
            data: ["stage": "map(. > 0 ? 1 / 0 : .)", "error": "division by zero", "line": 1, "column": 35])))
    }

    @Test func runtimeFailuresNameTheStage() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("orders | map(.qty * .price)")
        env["orders"].send(["qty": 2, "price": 3])
        env["orders"].send(["qty": "many", "price": 3])
        env["orders"].send(["qty": 2, "price": 3])
        #expect(r.values == [6])
        guard case let .failure(error)? = r.events.last else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .failed)
        #expect(error.message == "map(.qty * .price): '*' needs numbers, got string and int")
        #expect(error.data?["stage"] == "map(.qty * .price)")
        #expect(error.data?["error"] == "'*' needs numbers, got string and int")
        #expect(error.data?["column"] == 14)
        // The subject's subscription was cancelled.
        env["orders"].send(["qty": 1, "price": 1])
        #expect(r.values == [6])
    }

    @Test func timingOperators() throws {
        let env = PipelineTestEnvironment()
        let debounced = try env.run("a | debounce(100ms)")
        let throttled = try env.run("a | throttle(100ms)")
        let latest = try env.run("a | throttle(100ms, latest)")
        let delayed = try env.run("a | delay(50ms)")
        let s = env.testScheduler
        env["a"].send(1)
        s.advance(by: .milliseconds(30))
        env["a"].send(2)
        s.advance(by: .milliseconds(30))
        env["a"].send(3)
        #expect(delayed.values == [1])
        s.advance(by: .milliseconds(200))
        #expect(debounced.values == [3])
        #expect(throttled.values == [1, 2])
        #expect(latest.values == [1, 3])
        #expect(delayed.values == [1, 2, 3])
    }

    @Test(arguments: [
        ("nosuch", "not_found", "no subject 'nosuch'"),
        ("nosuch(1)", "pipeline_error", "1:1: unknown source 'nosuch'"),
        ("map(.)", "pipeline_error", "1:1: 'map' is an operator: a pipeline starts with a source"),
        ("a | just(1)", "pipeline_error", "1:5: 'just' is a source: it can only start a pipeline"),
        ("a | frobnicate()", "pipeline_error", "1:5: unknown operator 'frobnicate'"),
        ("a | map(.x, .y)", "pipeline_error", "1:5: map takes 1 argument, got 2"),
        ("a | map($acc)", "pipeline_error", "1:9: '$acc' is only available in scan and reduce"),
        ("a | scan(0, $total)", "pipeline_error", "1:13: unknown variable '$total'"),
        ("a | map(qty)", "pipeline_error", "1:9: unknown name 'qty' (fields are written '.qty')"),
        ("a | map(frob(.))", "pipeline_error", "1:9: unknown function 'frob'"),
        ("a | map(filter(.))", "pipeline_error", "1:9: filter takes 2 arguments, got 1"),
        ("a | map(prefix(.))", "pipeline_error", "1:9: 'prefix' is a stage, not a function of expressions"),
        ("a | map(x -> x)", "pipeline_error", "1:9: a lambda can only be the second argument of map, filter or sort"),
        ("a | map(250ms)", "pipeline_error", "1:9: map expects an expression here, not a duration"),
        ("a | map(b | c)", "pipeline_error", "1:9: map expects an expression here, not a pipeline"),
        ("a | debounce(1)", "pipeline_error", "1:14: debounce expects a duration such as 250ms"),
        ("a | prefix(\"x\")", "pipeline_error", "1:12: prefix needs a non-negative integer, got \"x\""),
        ("a | prefix(-1)", "pipeline_error", "1:12: prefix needs a non-negative integer, got -1"),
        ("a | collect(0)", "pipeline_error", "1:13: collect needs a count of at least 1"),
        ("sequence(1)", "pipeline_error", "1:10: sequence needs an array, got int"),
        ("just(1 / 0)", "pipeline_error", "1:6: division by zero"),
        ("merge(1)", "pipeline_error", "1:7: merge expects a pipeline here"),
        ("a | throttle(1s, last)", "pipeline_error", "1:18: throttle's second argument is 'latest' or 'first'"),
        ("a | first(when: . > 1)", "pipeline_error", "1:17: first has no argument 'when'"),
        ("a | map(where: .)", "pipeline_error", "1:16: map has no argument 'where'"),
        ("trigger(1)", "pipeline_error", "1:9: trigger needs a name (a string), got 1"),
        ("merge(a, nosuch)", "not_found", "no subject 'nosuch'"),
        ("merge(1s)", "pipeline_error", "1:7: merge expects a pipeline here, not a duration"),
        ("merge()", "pipeline_error", "1:1: merge needs at least 1 pipeline"),
        ("reduceLatest(a)", "pipeline_error", "1:1: reduceLatest needs at least 2 pipelines"),
        ("a | reduceLatest()", "pipeline_error", "1:5: reduceLatest needs at least 1 pipeline"),
        ("a | accumulateLatest(1)", "pipeline_error", "1:22: accumulateLatest expects a pipeline here"),
        ("a | first(1)", "pipeline_error", "1:11: first expects 'where:' here"),
        ("a | removeDuplicates(1)", "pipeline_error", "1:22: removeDuplicates expects 'by:' here"),
        ("a | collect(1, 2)", "pipeline_error", "1:16: collect takes a count, or a duration and an optional count"),
        ("a | buffer(2, drop)", "pipeline_error", "1:15: buffer's second argument is dropOldest, dropNewest or error"),
        ("a | flatMap(maxPublishers: 1)", "pipeline_error", "1:28: flatMap's first argument is a pipeline"),
        ("a | flatMap(b, 1)", "pipeline_error", "1:16: flatMap's second argument is 'maxPublishers:'"),
        ("a | output(in: [3, 1])", "pipeline_error", "1:16: output(in:) needs [lower, upper] with 0 <= lower <= upper"),
        ("a | map(length(b | c))", "pipeline_error", "1:16: length takes expressions as arguments"),
        ("a | map(length(where: .))", "pipeline_error", "1:23: length has no argument 'where'"),
        ("a | map(map(.a, x -> y))", "pipeline_error", "1:22: unknown name 'y' (fields are written '.y')"),
        ("a | map(map(.a, x -> x))", "", ""),
        ("a | map($a)", "pipeline_error", "1:9: '$a' is only available in min(by:) and max(by:)"),
        ("a | min($a < $b)", "pipeline_error", "1:9: min expects 'by:' here"),
        // A near miss of a known name is suggested.
        ("a | mapp(.)", "pipeline_error", "1:5: unknown operator 'mapp' (did you mean 'map'?)"),
        ("a | fliter(. > 1)", "pipeline_error", "1:5: unknown operator 'fliter' (did you mean 'filter'?)"),
        ("a | Scan(0, $acc + .)", "pipeline_error", "1:5: unknown operator 'Scan' (did you mean 'scan'?)"),
        ("a | removeDups()", "pipeline_error", "1:5: unknown operator 'removeDups'"),
        ("sequnce([1])", "pipeline_error", "1:1: unknown source 'sequnce' (did you mean 'sequence'?)"),
        ("a | map(lenght(.))", "pipeline_error", "1:9: unknown function 'lenght' (did you mean 'length'?)"),
    ])
    func compileErrors(text: String, code: String, message: String) {
        let env = PipelineTestEnvironment()
        let error = pipelineError { _ = try env.compile(text) }
        if code.isEmpty {
            #expect(error == nil)
            return
        }
        #expect(error?.code.rawValue == code)
        #expect(error?.message == message)
        if code == "pipeline_error" {
            let parts = message.split(separator: ":").prefix(2).compactMap { Int64($0) }
            #expect(error?.data == Value.object(["line": .int(parts[0]), "column": .int(parts[1])]))
        }
    }

    @Test func stageLimitCountsNestedStages() {
        let env = PipelineTestEnvironment()
        env.limits = PipelineLimits(maxStages: 5)
        #expect(pipelineError { _ = try env.compile("merge(a, b, c) | first()") } == nil)
        let error = pipelineError { _ = try env.compile("merge(a, b, c, just(1)) | first()") }
        #expect(error?.message == "1:27: too many stages (the limit is 5)")
        let long = pipelineError { _ = try env.compile("merge(a, b) | map(.) | map(.) | map(.)") }
        #expect(long?.message == "1:33: too many stages (the limit is 5)")
    }

    // MARK: - Demand

    @Test func demandFlowsThroughMapFilterScanToAColdSource() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("numbers | map(. * 2) | filter(. % 3 == 0) | scan(0, $acc + .)", demand: .max(3))
        #expect(r.values == [0, 6, 18])
        // 0...6 were consumed; the sequence publisher reads one element ahead (as Combine's does,
        // to finish right after its last element), so 8 were pulled from the iterator.
        #expect(env.counter.produced == 7 + 1)
        r.request(.max(2))
        #expect(r.values == [0, 6, 18, 36, 60])
        #expect(env.counter.produced == 13 + 1)
        r.cancel()
        #expect(env.counter.produced == 13 + 1)
    }

    @Test func demandReachesTheProbeUnchanged() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("probe | map(.x) | filter(. != null) | compactMap(.) | removeDuplicates() | prefix(5)", demand: .max(2))
        #expect(env.probe.requests == [.max(2)])
        #expect(env.probe.send(["x": 1]) == .none)
        #expect(env.probe.send(["y": 1]) == .max(1))
        #expect(r.values == [1])
        r.cancel()
        #expect(env.probe.cancellations == 1)
    }

    @Test func prefixCapsTheDemandOfAnUnlimitedSubscriber() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("numbers | map(. + 1) | prefix(3)")
        #expect(r.events == [.subscription, .value(1), .value(2), .value(3), .finished])
        // Exactly what the same chain written with the engine's operators pulls.
        let counter = PipelineCounter()
        let direct = Publishers.Sequence<PipelineCountingSequence, HubError>(
            sequence: PipelineCountingSequence(counter: counter, limit: 1000))
            .map { Value.int(($0.intValue ?? 0) + 1) }.prefix(3).record()
        #expect(direct.values == r.values)
        #expect(env.counter.produced == counter.produced)
    }

    @Test func cancellingACompiledPipelineCancelsUpstreamAndTimers() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("probe | map(.) | filter(true) | scan(0, $acc + .) | delay(10ms) | debounce(20ms)", demand: .max(5))
        env.probe.send(1)
        env.testScheduler.advance(by: .milliseconds(5))
        #expect(!env.testScheduler.isIdle)
        r.cancel()
        #expect(env.probe.cancellations == 1)
        env.testScheduler.advance(by: .seconds(1))
        env.probe.send(2)
        #expect(r.events == [.subscription])
    }

    @Test func oneCompiledPipelineServesSeveralSubscribersIndependently() throws {
        let env = PipelineTestEnvironment()
        let publisher = try env.compile("sequence([1, 2, 3]) | scan(0, $acc + .)")
        let first = publisher.record(initialDemand: .max(1))
        let second = publisher.record()
        #expect(first.values == [1])
        #expect(second.values == [1, 3, 6])
    }
}
