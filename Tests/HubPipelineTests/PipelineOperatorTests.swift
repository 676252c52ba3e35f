import HubValue
import HubWire
import Testing

@Suite("Pipeline operators beyond the core")
struct PipelineOperatorTests {
    @Test(arguments: [
        ("sequence([1, 2, 3]) | contains(2)", [true]),
        ("sequence([1, 2, 3]) | contains(9)", [false]),
        ("sequence([1, 2, 3]) | contains(where: . > 2)", [true]),
        ("sequence([1, 2, 3]) | allSatisfy(. > 0)", [true]),
        ("sequence([1, 2, 3]) | allSatisfy(. > 1)", [false]),
        ("sequence([1, 2, 3]) | count()", [3]),
        ("sequence([3, 1, 2]) | min()", [1]),
        ("sequence([\"b\", \"c\", \"a\"]) | max()", ["c"]),
        ("sequence([1, 2, 3]) | output(at: 1)", [2]),
        // Combine's closed ranges (`[1, 3]` once gave [2, 3], a half-open range).
        ("sequence([1, 2, 3, 4]) | output(in: [1, 3])", [2, 3, 4]),
        ("sequence([1, 2, 3, 4, 5]) | output(in: [2, 3])", [3, 4]),
        ("sequence([1, 2, 3]) | output(in: [1, 1])", [2]),
        ("sequence([1, 2, 3]) | dropFirst()", [2, 3]),
        ("sequence([1, 2, 3]) | dropFirst(2)", [3]),
        ("sequence([1, 2, 3, 1]) | prefix(while: . < 3)", [1, 2]),
        ("sequence([1, 2, 3, 1]) | drop(while: . < 3)", [3, 1]),
        ("sequence([1, 2, 3, 4]) | first(where: . % 2 == 0)", [2]),
        ("sequence([1, 2, 3, 4]) | last(where: . % 2 == 1)", [3]),
        ("sequence([1, 2]) | append(3, 4)", [1, 2, 3, 4]),
        ("empty() | replaceEmpty(0)", [0]),
        ("sequence([1, 2]) | replaceEmpty(0)", [1, 2]),
        ("sequence([1, 2]) | ignoreOutput()", []),
        ("sequence([1, 2, 3]) | collect()", [[1, 2, 3]]),
        ("fail(\"boom\") | catch(just(.data))", ["boom"]),
        ("fail(1) | catch(just(.code))", ["failed"]),
        ("sequence([1, 2]) | flatMap(sequence([., . * 10]))", [1, 10, 2, 20]),
        ("sequence([1, 2]) | flatMap(just(.) | map(. + 1), maxPublishers: 1)", [2, 3]),
        ("sequence([1, 2]) | merge(just(9))", [1, 9, 2]),
        ("sequence([1, 2]) | zip(sequence([\"a\", \"b\"]))", [[1, "a"], [2, "b"]]),
        ("just(1) | combineLatest(just(2), just(3))", [[1, 2, 3]]),
        ("sequence([{items: [1, 2]}]) | map(map(.items, x -> x * 2))", [[2, 4]]),
        ("just({a: 1}) | map(merge(., {b: 2}))", [["a": 1, "b": 2]]),
        ("accumulateLatest(just(1), sequence([2, 3]))", [[1, 2], [1, 3]]),
        ("reduceLatest(just(1), empty())", [[1, nil]]),
        ("reduceLatest(just(1), empty(), just(3), just(4))", [[1, nil, nil, nil], [1, nil, 3, nil], [1, nil, 3, 4]]),
        // The operator forms (the seed's `pub1.reduceLatest(pub2, pub3)`): the upstream comes first.
        ("just(1) | reduceLatest(empty(), just(3))", [[1, nil, nil], [1, nil, 3]]),
        ("just(1) | reduceLatest(just(2))", [[1, nil], [1, 2]]),
        // Inputs are read to their latest value: the sequence has ended on 2 when "a" arrives.
        ("sequence([1, 2]) | accumulateLatest(just(\"a\"))", [[2, "a"]]),
        ("sequence([1, 2]) | combineLatest(just(\"a\"))", [[2, "a"]]),
        ("just(1) | share()", [1]),
        ("sequence([{id: 1, v: 1}, {id: 1, v: 2}, {id: 2, v: 3}]) | removeDuplicates(by: $prev.id == .id) | map(.v)", [1, 3]),
        ("sequence([1, null, 2]) | replaceNil(0)", [1, 0, 2]),
        ("sequence([{p: 3}, {p: 1}, {p: 2}]) | min(by: $a.p < $b.p)", [["p": 1]]),
        ("sequence([{p: 3}, {p: 1}, {p: 5}]) | max(by: $a.p < $b.p)", [["p": 5]]),
        ("sequence([1, 2]) | prepend(sequence([-1, 0]))", [-1, 0, 1, 2]),
        ("sequence([1, 2]) | append(just(3) | map(. * 10))", [1, 2, 30]),
        ("sequence([1, 2]) | prepend(length(\"ab\"))", [2, 1, 2]),
    ] as [(String, [Value])])
    func finiteOperators(text: String, expected: [Value]) throws {
        let env = PipelineTestEnvironment()
        let r = try env.run(text)
        #expect(r.events == [.subscription] + expected.map { .value($0) } + [.finished], "\(text)")
    }

    @Test func predicateFailuresFailWithTheStage() throws {
        let env = PipelineTestEnvironment()
        for (text, message) in [
            ("sequence([1, \"a\"]) | filter(. > 0)", "filter(. > 0): '>' needs two numbers or two strings, got string and int"),
            ("sequence([1, \"a\"]) | allSatisfy(. > 0)", "allSatisfy(. > 0): '>' needs two numbers or two strings, got string and int"),
            ("sequence([1, \"a\"]) | min()", "min(): cannot compare string and int"),
            ("sequence([1, 0]) | scan(1, $acc / .)", "scan(1, $acc / .): division by zero"),
            ("sequence([1]) | reduce(9223372036854775807, $acc + .)", "reduce(9223372036854775807, $acc + .): integer overflow in '+'"),
        ] {
            let r = try env.run(text)
            guard case let .failure(error)? = r.events.last else {
                Issue.record("\(text) should fail")
                continue
            }
            #expect(error.code == .failed)
            #expect(error.message == message)
        }
    }

    @Test func switchToLatestBuildsAPipelinePerValue() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | map(.topic) | switchToLatest(subject(\"medias.\" + .))")
        env["a"].send(["topic": "x"])
        env["medias.x"].send(1)
        env["a"].send(["topic": "y"])
        env["medias.x"].send(2)
        env["medias.y"].send(3)
        #expect(r.values == [1, 3])
        #expect(env.requestedNames == ["a", "medias.x", "medias.y"])
        // An unknown name fails the stream with the environment's error.
        env["a"].send(["topic": "nosuch"])
        #expect(r.events.last == .failure(HubError(.notFound, "no subject 'medias.nosuch'")))
    }

    @Test func flatMapMergesInnerPipelines() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | flatMap(subject(.) | map(. * 10))")
        env["a"].send("b")
        env["a"].send("c")
        env["b"].send(1)
        env["c"].send(2)
        env["b"].send(3)
        #expect(r.values == [10, 20, 30])
    }

    @Test func flatMapDemandIsBounded() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("probe | flatMap(sequence([., .]), maxPublishers: 1)", demand: .max(3))
        #expect(env.probe.requests == [.max(1)])
        env.probe.send(1)
        #expect(r.values == [1, 1])
        #expect(env.probe.requests == [.max(1), .max(1)])
    }

    @Test func catchRunsAPipelineFromTheError() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | map(10 / .) | catch(just(.message))")
        env["a"].send(2)
        env["a"].send(0)
        #expect(r.events == [.subscription, .value(5), .value("map(10 / .): division by zero"), .finished])
    }

    @Test func seedOperators() throws {
        let env = PipelineTestEnvironment()
        let repeating = try env.run("publishAndRepeat(trigger(reload), numbers | prefix(2))")
        let published = try env.run("publish(trigger(reload), just(\"run\"))")
        let waiting = try env.run("a | wait(untilOutputFrom: signal)")
        let waiting2 = try env.run("b | wait(signal)")
        #expect(repeating.values == [0, 1])
        #expect(published.values == [])
        env.activate("reload")
        #expect(repeating.values == [0, 1, 0, 1])
        #expect(published.values == ["run"])
        env["a"].send(1)
        env["b"].send(1)
        env["signal"].send(true)
        env["a"].send(2)
        env["b"].send(2)
        #expect(waiting.values == [2])
        #expect(waiting2.values == [2])
    }

    @Test func latestCombiners() throws {
        let env = PipelineTestEnvironment()
        let accumulated = try env.run("accumulateLatest(a, b, c)")
        let reduced = try env.run("reduceLatest(a, b, c)")
        env["a"].send(1)
        env["b"].send(2)
        env["c"].send(3)
        env["a"].send(4)
        #expect(accumulated.values == [[1, 2, 3], [4, 2, 3]])
        #expect(reduced.values == [[1, nil, nil], [1, 2, nil], [1, 2, 3], [4, 2, 3]])
    }

    @Test func untilOutputFrom() throws {
        let env = PipelineTestEnvironment()
        let prefixed = try env.run("a | prefix(untilOutputFrom: b)")
        let dropped = try env.run("a | drop(untilOutputFrom: b)")
        env["a"].send(1)
        env["b"].send(0)
        env["a"].send(2)
        #expect(prefixed.events == [.subscription, .value(1), .finished])
        #expect(dropped.values == [2])
    }

    @Test func timingExtensions() throws {
        let env = PipelineTestEnvironment()
        let measured = try env.run("a | measureInterval()")
        let timeout = try env.run("a | timeout(100ms)")
        let timeoutFailing = try env.run("b | timeout(100ms, \"no data\")")
        let s = env.testScheduler
        s.advance(by: .milliseconds(40))
        env["a"].send(1)
        s.advance(by: .milliseconds(60))
        env["a"].send(2)
        #expect(measured.values == [40, 60])
        s.advance(by: .milliseconds(100))
        #expect(timeout.events == [.subscription, .value(1), .value(2), .finished])
        #expect(timeoutFailing.events == [.subscription, .failure(HubError.failed("no data", message: "timed out"))])
    }

    @Test func mapErrorRewritesTheFailureValue() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("fail({reason: \"x\"}) | mapError({why: .data.reason, code: .code})")
        #expect(r.events == [.subscription, .failure(HubError.failed(["why": "x", "code": "failed"], message: "the stream failed"))])
    }

    @Test func collectByTimeAndCount() throws {
        let env = PipelineTestEnvironment()
        let byTime = try env.run("a | collect(100ms)")
        let byTimeOrCount = try env.run("a | collect(100ms, 2)")
        env["a"].send(1)
        env["a"].send(2)
        env["a"].send(3)
        #expect(byTime.values == [])
        #expect(byTimeOrCount.values == [[1, 2]])
        env.testScheduler.advance(by: .milliseconds(100))
        #expect(byTime.values == [[1, 2, 3]])
        #expect(byTimeOrCount.values == [[1, 2], [3]])
        let error = pipelineError { _ = try env.compile("a | collect(100ms, 0)") }
        #expect(error?.message == "1:20: collect needs a count of at least 1")
        let wrongVariable = pipelineError { _ = try env.compile("a | removeDuplicates(by: $acc == .)") }
        #expect(wrongVariable?.message == "1:26: '$acc' is only available in scan and reduce")
        let prevElsewhere = pipelineError { _ = try env.compile("a | map($prev)") }
        #expect(prevElsewhere?.message == "1:9: '$prev' is only available in removeDuplicates(by:)")
    }

    @Test func nowReadsTheSchedulerClock() throws {
        let env = PipelineTestEnvironment()
        let r = try env.run("a | map(now())")
        env.testScheduler.advance(by: .milliseconds(1500))
        env["a"].send(nil)
        #expect(r.values == [1500])
    }

    @Test func bufferAbsorbsBurstsWithinItsSize() throws {
        let env = PipelineTestEnvironment()
        let oldest = try env.run("a | buffer(2)", demand: .none)
        let failing = try env.run("a | buffer(2, error)", demand: .none)
        for i in 1...3 { env["a"].send(.int(Int64(i))) }
        oldest.request(.unlimited)
        #expect(oldest.values == [2, 3])
        #expect(env.probe.requests.isEmpty)
        // The overflow is delivered on the next downstream request, as Combine's buffer does.
        failing.request(.max(1))
        #expect(failing.events.last == .failure(HubError(.overflow, "buffer(2) overflowed")))
        let probed = try env.run("probe | buffer(5)", demand: .max(1))
        #expect(env.probe.requests == [.unlimited])
        env.probe.send(1)
        env.probe.send(2)
        #expect(probed.values == [1])
        probed.request(.max(1))
        #expect(probed.values == [1, 2])
    }

    @Test func shareSubscribesUpstreamOnce() throws {
        let env = PipelineTestEnvironment()
        let publisher = try env.compile("probe | share()")
        let first = publisher.record(initialDemand: .max(1))
        let second = publisher.record(initialDemand: .max(1))
        #expect(env.probe.subscriptions == 1)
        env.probe.send(7)
        #expect(first.values == [7])
        #expect(second.values == [7])
    }

    @Test func bareOperatorNamesNeedNoParentheses() throws {
        let env = PipelineTestEnvironment()
        #expect(try env.run("sequence([1, 2]) | last").values == [2])
    }

    @Test func reducingOperatorsRequestUnlimitedAsCombineDoes() throws {
        let env = PipelineTestEnvironment()
        _ = try env.run("probe | reduce(0, $acc + .)", demand: .max(1))
        #expect(env.probe.requests == [.unlimited])
    }
}
