import HubEngine
import HubPipeline
import HubTesting
import HubValue
import HubWire
import Testing

/// Keyed state (`groupBy`) and windows (`tumbling`, `hopping`, `session`) in the pipeline
/// language, on virtual time: their results against references computed by hand, their
/// demand against a Combine reference model (Combine has no such operators), their bounds,
/// and their checkpoints (restored mid-stream, they go on as an uninterrupted run).
@Suite("Pipelines: keyed state and windows")
struct KeyedPipelineTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    /// Compiles `source` against a fresh environment (its `probe` source under the test's control).
    private static func compiled(_ source: String, checkpoints: CheckpointRegistry? = nil) throws -> (PipelineTestEnvironment, AnyPublisher<Value, HubError>) {
        let environment = PipelineTestEnvironment()
        environment.checkpoints = checkpoints
        return (environment, try environment.compile(source))
    }

    private static func item(_ key: String, _ value: Int64, at ts: Int64? = nil) -> Value {
        var object: Value.Object = ["k": .string(key), "v": .int(value)]
        if let ts { object["ts"] = .int(ts) }
        return .object(object)
    }

    // MARK: groupBy

    /// The reference: a scan over a dictionary of sums by key, emitting the updated key's.
    private static func reference(_ upstream: AnyPublisher<Value, HubError>) -> AnyPublisher<Value, HubError> {
        upstream.scan((sums: [Value: Int64](), last: Value.null)) { state, value in
            var sums = state.sums
            let key = value["k"] ?? .null
            let sum = (sums[key] ?? 0) + (value["v"]?.intValue ?? 0)
            sums[key] = sum
            return (sums, ["key": key, "value": .int(sum)])
        }
        .map(\.last)
        .eraseToAnyPublisher()
    }

    @Test func groupByKeepsOneStatePerKeyAsAScanOverADictionary() throws {
        let inputs = [Self.item("a", 1), Self.item("b", 10), Self.item("a", 2), Self.item("c", 100), Self.item("b", 20), Self.item("a", 3)]
        for (initial, perValue) in [(Subscribers.Demand.unlimited, Subscribers.Demand.none), (.max(2), .max(1)), (.max(1), .none)] {
            let (environment, groups) = try Self.compiled("probe | groupBy(.k, scan(0, $acc + .v))")
            let grouped = Recorder(initialDemand: initial, demandPerValue: perValue)
            groups.subscribe(grouped)
            let referenceProbe = DemandProbe<Value, HubError>()
            let expected = Recorder(initialDemand: initial, demandPerValue: perValue)
            Self.reference(referenceProbe.eraseToAnyPublisher()).subscribe(expected)
            for input in inputs {
                environment.probe.send(input)
                referenceProbe.send(input)
                if initial == .max(1) {
                    grouped.request(.max(1))
                    expected.request(.max(1))
                }
            }
            environment.probe.send(completion: .finished)
            referenceProbe.send(completion: .finished)
            #expect(grouped.events == expected.events, "demand \(initial) + \(perValue)")
            #expect(environment.probe.requests == referenceProbe.requests, "demand \(initial) + \(perValue)")
        }
    }

    @Test func groupByBoundsItsLiveKeysEndingTheLeastRecentlyUsed() throws {
        // A reduce emits its result when its group ends: the bound makes it visible.
        let (environment, groups) = try Self.compiled("probe | groupBy(.k, reduce(0, $acc + .v), maxKeys: 2)")
        let out = Recorder(initialDemand: .unlimited)
        groups.subscribe(out)
        environment.probe.send(Self.item("a", 1))
        environment.probe.send(Self.item("b", 2))
        environment.probe.send(Self.item("a", 3))
        #expect(out.values.isEmpty)
        // A third key: b, the least recently used, ends.
        environment.probe.send(Self.item("c", 5))
        #expect(out.values == [["key": "b", "value": 2]])
        environment.probe.send(completion: .finished)
        #expect(out.values == [["key": "b", "value": 2], ["key": "a", "value": 4], ["key": "c", "value": 5]])
        #expect(out.isCompleted)
    }

    @Test func groupByEndsAnIdleGroup() throws {
        let (environment, groups) = try Self.compiled("probe | groupBy(.k, reduce(0, $acc + .v), idle: 100ms)")
        let out = Recorder(initialDemand: .unlimited)
        groups.subscribe(out)
        environment.probe.send(Self.item("a", 1))
        environment.testScheduler.advance(by: .milliseconds(60))
        environment.probe.send(Self.item("b", 2))
        environment.testScheduler.advance(by: .milliseconds(60))
        #expect(out.values == [["key": "a", "value": 1]], "a was idle 100 ms at the sweep of 100 ms")
        environment.testScheduler.advance(by: .milliseconds(100))
        #expect(out.values == [["key": "a", "value": 1], ["key": "b", "value": 2]])
        // A new value of an ended key starts it afresh.
        environment.probe.send(Self.item("a", 7))
        environment.probe.send(completion: .finished)
        #expect(out.values.last == ["key": "a", "value": 7])
    }

    @Test func groupByRestoredFromACheckpointGoesOnAsAnUninterruptedRun() throws {
        let source = "probe | groupBy(.k, scan(0, $acc + .v) | removeDuplicates(), maxKeys: 3)"
        let inputs = [Self.item("a", 1), Self.item("b", 10), Self.item("a", 0), Self.item("c", 100), Self.item("d", 1), Self.item("b", 5), Self.item("a", 2)]
        for cut in 1..<inputs.count {
            let (whole, wholePipeline) = try Self.compiled(source, checkpoints: CheckpointRegistry())
            let expected = Recorder(initialDemand: .unlimited)
            wholePipeline.subscribe(expected)
            for input in inputs { whole.probe.send(input) }

            let first = CheckpointRegistry()
            let (before, beforePipeline) = try Self.compiled(source, checkpoints: first)
            let head = Recorder(initialDemand: .unlimited)
            beforePipeline.subscribe(head)
            for input in inputs.prefix(cut) { before.probe.send(input) }
            let snapshot = first.snapshot()
            head.cancel()
            let restored = CheckpointRegistry(restoring: snapshot)
            let (after, afterPipeline) = try Self.compiled(source, checkpoints: restored)
            let tail = Recorder(initialDemand: .unlimited)
            afterPipeline.subscribe(tail)
            for input in inputs.dropFirst(cut) { after.probe.send(input) }
            #expect(restored.failures.isEmpty)
            #expect(head.values + tail.values == expected.values, "cut \(cut)")
        }
    }

    @Test func groupByRefusesWhatIsNotAPipelineOfOperators() {
        let environment = PipelineTestEnvironment()
        for (source, message) in [
            ("probe | groupBy(.k)", "groupBy takes a key and a pipeline"),
            ("probe | groupBy(.k, orders)", "'orders' is not an operator"),
            ("probe | groupBy(.k, scan(0, $acc + .v), maxKeys: 0)", "maxKeys must be between 1 and 1000000"),
            ("probe | groupBy(.k, scan(0, $acc + .v), size: 3)", "groupBy has no argument 'size'"),
        ] {
            #expect(throws: HubError.self, "\(source)") { _ = try environment.compile(source).sink(receiveCompletion: { _ in }, receiveValue: { _ in }) }
            do {
                _ = try environment.compile(source).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
            } catch {
                #expect(error.message.contains(message), "\(source): \(error.message)")
            }
        }
    }

    // MARK: Windows

    private static func window(_ key: String, _ start: Int64, _ end: Int64, _ value: Value, final: Bool = true) -> Value {
        ["key": .string(key), "start": .int(start), "end": .int(end), "value": value, "final": .bool(final)]
    }

    @Test func tumblingWindowsCountPerKeyInArrivalTime() throws {
        let (environment, windows) = try Self.compiled("probe | tumbling(100ms, count(), key: .k)")
        let out = Recorder(initialDemand: .unlimited)
        windows.subscribe(out)
        let clock = environment.testScheduler
        environment.probe.send(Self.item("a", 1))
        environment.probe.send(Self.item("b", 1))
        clock.advance(by: .milliseconds(50))
        environment.probe.send(Self.item("a", 1))
        clock.advance(by: .milliseconds(49))
        #expect(out.values.isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(out.values == [Self.window("a", 0, 100, 2), Self.window("b", 0, 100, 1)])
        clock.advance(by: .milliseconds(20))
        environment.probe.send(Self.item("a", 1))
        clock.advance(by: .milliseconds(80))
        #expect(out.values.last == Self.window("a", 100, 200, 1))
    }

    @Test func hoppingWindowsHoldEachValueInEveryWindowThatCoversIt() throws {
        let (environment, windows) = try Self.compiled("probe | hopping(100ms, 50ms, sum(.v), time: .ts)")
        let out = Recorder(initialDemand: .unlimited)
        windows.subscribe(out)
        for (value, ts) in [(1, 10), (2, 60), (4, 120), (8, 260)] as [(Int64, Int64)] {
            environment.probe.send(Self.item("x", value, at: ts))
        }
        // The windows with values that end by the watermark, 260, have closed.
        let byStart = Dictionary(uniqueKeysWithValues: out.values.map { ($0["start"]!.intValue!, $0["value"]!) })
        #expect(byStart == [-50: 1, 0: 3, 50: 6, 100: 4])
        environment.probe.send(completion: .finished)
        let all = Dictionary(uniqueKeysWithValues: out.values.map { ($0["start"]!.intValue!, $0["value"]!) })
        #expect(all == [-50: 1, 0: 3, 50: 6, 100: 4, 200: 8, 250: 8])
    }

    @Test func sessionWindowsCloseAfterTheirGap() throws {
        let (environment, windows) = try Self.compiled("probe | session(100ms, collect(.v), key: .k)")
        let out = Recorder(initialDemand: .unlimited)
        windows.subscribe(out)
        let clock = environment.testScheduler
        environment.probe.send(Self.item("a", 1))
        clock.advance(by: .milliseconds(80))
        environment.probe.send(Self.item("a", 2))
        clock.advance(by: .milliseconds(99))
        #expect(out.values.isEmpty, "the gap runs from the last value")
        clock.advance(by: .milliseconds(1))
        #expect(out.values == [Self.window("a", 0, 80, [1, 2])])
    }

    @Test func eventTimeWindowsWaitForTheWatermarkAndDropLateValues() throws {
        let (environment, windows) = try Self.compiled(
            "probe | tumbling(100ms, {n: count(), total: sum(.v)}, key: .k, time: .ts, lateness: 50ms)")
        let out = Recorder(initialDemand: .unlimited)
        windows.subscribe(out)
        environment.probe.send(Self.item("a", 1, at: 10))
        environment.probe.send(Self.item("a", 2, at: 120))
        // Out of order but within the lateness: still counted in [0, 100).
        environment.probe.send(Self.item("a", 4, at: 90))
        #expect(out.values.isEmpty)
        environment.probe.send(Self.item("a", 8, at: 150))
        #expect(out.values == [Self.window("a", 0, 100, ["n": 2, "total": 5])])
        // Too late: [0, 100) has closed.
        environment.probe.send(Self.item("a", 16, at: 50))
        environment.probe.send(completion: .finished)
        #expect(out.values == [Self.window("a", 0, 100, ["n": 2, "total": 5]), Self.window("a", 100, 200, ["n": 2, "total": 10])])
    }

    @Test func earlyResultsComeBeforeTheFinalOne() throws {
        let (environment, windows) = try Self.compiled("probe | tumbling(1s, max(.v), key: .k, early: 200ms)")
        let out = Recorder(initialDemand: .unlimited)
        windows.subscribe(out)
        let clock = environment.testScheduler
        environment.probe.send(Self.item("a", 3))
        clock.advance(by: .milliseconds(200))
        #expect(out.values == [Self.window("a", 0, 1000, 3, final: false)])
        clock.advance(by: .milliseconds(200))
        #expect(out.values.count == 1, "nothing changed")
        environment.probe.send(Self.item("a", 7))
        clock.advance(by: .milliseconds(600))
        #expect(out.values == [
            Self.window("a", 0, 1000, 3, final: false), Self.window("a", 0, 1000, 7, final: false), Self.window("a", 0, 1000, 7),
        ])
    }

    @Test func windowsAskForEverythingAndHoldTheirResultsForDemand() throws {
        let (environment, windows) = try Self.compiled("probe | tumbling(10ms, count(), time: .ts)")
        let out = Recorder(initialDemand: .none)
        windows.subscribe(out)
        #expect(environment.probe.requests == [.unlimited])
        for ts in [1, 11, 21, 31] as [Int64] { environment.probe.send(Self.item("x", 1, at: ts)) }
        #expect(out.values.isEmpty)
        out.request(.max(2))
        #expect(out.values.map { $0["start"]! } == [0, 10])
        out.request(.max(2))
        #expect(out.values.map { $0["start"]! } == [0, 10, 20])
    }

    @Test func windowsRestoredFromACheckpointGoOnAsAnUninterruptedRun() throws {
        let source = "probe | hopping(100ms, 50ms, {n: count(), avg: avg(.v), low: min(.v)}, key: .k, time: .ts, lateness: 20ms)"
        var inputs: [Value] = []
        var random = SeededGenerator(seed: 29)
        for index in 0..<40 {
            let ts = Int64(index * 15) + Int64.random(in: -25...5, using: &random)
            inputs.append(Self.item(["a", "b", "c"][Int.random(in: 0...2, using: &random)], Int64.random(in: 0...9, using: &random), at: ts))
        }
        let (whole, wholePipeline) = try Self.compiled(source, checkpoints: CheckpointRegistry())
        let expected = Recorder(initialDemand: .unlimited)
        wholePipeline.subscribe(expected)
        for input in inputs { whole.probe.send(input) }
        whole.probe.send(completion: .finished)
        for cut in stride(from: 1, to: inputs.count, by: 7) {
            let first = CheckpointRegistry()
            let (before, beforePipeline) = try Self.compiled(source, checkpoints: first)
            let head = Recorder(initialDemand: .unlimited)
            beforePipeline.subscribe(head)
            for input in inputs.prefix(cut) { before.probe.send(input) }
            let snapshot = first.snapshot()
            head.cancel()
            let restored = CheckpointRegistry(restoring: snapshot)
            let (after, afterPipeline) = try Self.compiled(source, checkpoints: restored)
            let tail = Recorder(initialDemand: .unlimited)
            afterPipeline.subscribe(tail)
            for input in inputs.dropFirst(cut) { after.probe.send(input) }
            after.probe.send(completion: .finished)
            #expect(restored.failures.isEmpty)
            #expect(head.values + tail.values == expected.values, "cut \(cut)")
        }
    }

    @Test func windowsRefuseWhatTheyCannotDo() {
        let environment = PipelineTestEnvironment()
        for (source, message) in [
            ("probe | tumbling(1s)", "tumbling takes a size and an aggregate"),
            ("probe | tumbling(1s, median(.v))", "aggregate is count()"),
            ("probe | tumbling(1s, count(), lateness: 1s)", "lateness applies to event time"),
            ("probe | hopping(1s, 2s, count())", "the advance must not exceed the size"),
            ("probe | session(1s, sum(.v), gap: 2s)", "session has no argument 'gap'"),
        ] {
            do {
                _ = try environment.compile(source)
                Issue.record("\(source) compiled")
            } catch {
                #expect(error.message.contains(message), "\(source): \(error.message)")
            }
        }
    }

    // MARK: Joins

    @Test func joinPairsValuesOfOneKeyThatCameWithinTheBound() throws {
        let (environment, joined) = try Self.compiled("probe | join(orders, on: .id, within: 100ms)")
        let out = Recorder(initialDemand: .unlimited)
        joined.subscribe(out)
        let clock = environment.testScheduler
        #expect(environment.probe.requests == [.unlimited])
        environment.probe.send(["id": 1, "side": "left", "n": 1])
        clock.advance(by: .milliseconds(50))
        environment["orders"].send(["id": 1, "side": "right", "n": 1])
        environment["orders"].send(["id": 2, "side": "right", "n": 2])
        #expect(out.values == [[["id": 1, "side": "left", "n": 1], ["id": 1, "side": "right", "n": 1]]])
        clock.advance(by: .milliseconds(200))
        // 250 ms after the first left value: too far from it.
        environment["orders"].send(["id": 1, "side": "right", "n": 3])
        #expect(out.values.count == 1)
        clock.advance(by: .milliseconds(10))
        environment.probe.send(["id": 1, "side": "left", "n": 4])
        #expect(out.values.last == [["id": 1, "side": "left", "n": 4], ["id": 1, "side": "right", "n": 3]])
        #expect(out.values.count == 2)
        environment.probe.send(completion: .finished)
        #expect(out.isCompleted)
    }

    @Test func joinInEventTimeUsesTheValuesTimes() throws {
        let (environment, joined) = try Self.compiled("probe | join(orders, on: .id, within: 10ms, time: .ts)")
        let out = Recorder(initialDemand: .unlimited)
        joined.subscribe(out)
        environment["orders"].send(["id": 1, "ts": 100])
        environment.probe.send(["id": 1, "ts": 95])
        environment.probe.send(["id": 1, "ts": 80])
        #expect(out.values == [[["id": 1, "ts": 95], ["id": 1, "ts": 100]]])
    }

    @Test func lookupPairsEachValueWithTheLatestOfItsKey() throws {
        let (environment, looked) = try Self.compiled("probe | lookup(prices, on: .s, otherOn: .key, value: .value)")
        let out = Recorder(initialDemand: .unlimited)
        looked.subscribe(out)
        environment["prices"].send(["key": "x", "value": 1])
        environment.probe.send(["s": "x"])
        environment.probe.send(["s": "y"])
        environment["prices"].send(["key": "x", "value": 2])
        environment.probe.send(["s": "x"])
        // A null value deletes the key.
        environment["prices"].send(["key": "x", "value": nil])
        environment.probe.send(["s": "x"])
        #expect(out.values == [[["s": "x"], 1], [["s": "y"], nil], [["s": "x"], 2], [["s": "x"], nil]])
    }

    @Test func joinsRestoredFromACheckpointGoOnAsAnUninterruptedRun() throws {
        for source in ["probe | join(orders, on: .k, within: 30ms, time: .ts)", "probe | lookup(orders, on: .k, maxValues: 2)"] {
            var steps: [(left: Bool, value: Value)] = []
            var random = SeededGenerator(seed: 7)
            for index in 0..<30 {
                let value = Self.item(["a", "b", "c"][Int.random(in: 0...2, using: &random)], Int64(index), at: Int64(index * 10))
                steps.append((Bool.random(using: &random), value))
            }
            func play(_ environment: PipelineTestEnvironment, _ range: some Sequence<(left: Bool, value: Value)>) {
                for step in range {
                    if step.left { environment.probe.send(step.value) } else { environment["orders"].send(step.value) }
                }
            }
            let (whole, wholePipeline) = try Self.compiled(source, checkpoints: CheckpointRegistry())
            let expected = Recorder(initialDemand: .unlimited)
            wholePipeline.subscribe(expected)
            play(whole, steps)
            for cut in stride(from: 1, to: steps.count, by: 5) {
                let first = CheckpointRegistry()
                let (before, beforePipeline) = try Self.compiled(source, checkpoints: first)
                let head = Recorder(initialDemand: .unlimited)
                beforePipeline.subscribe(head)
                play(before, steps.prefix(cut))
                let snapshot = first.snapshot()
                head.cancel()
                let restored = CheckpointRegistry(restoring: snapshot)
                let (after, afterPipeline) = try Self.compiled(source, checkpoints: restored)
                let tail = Recorder(initialDemand: .unlimited)
                afterPipeline.subscribe(tail)
                play(after, steps.dropFirst(cut))
                #expect(restored.failures.isEmpty)
                #expect(head.values + tail.values == expected.values, "\(source), cut \(cut)")
            }
        }
    }

    @Test func joinsRefuseWhatTheyCannotDo() {
        let environment = PipelineTestEnvironment()
        for (source, message) in [
            ("probe | join(orders, within: 1s)", "join takes the other pipeline and the key"),
            ("probe | join(orders, on: .id)", "join needs 'within:'"),
            ("probe | lookup(orders, on: .id, within: 1s)", "lookup has no argument 'within'"),
        ] {
            do {
                _ = try environment.compile(source)
                Issue.record("\(source) compiled")
            } catch {
                #expect(error.message.contains(message), "\(source): \(error.message)")
            }
        }
    }
}
