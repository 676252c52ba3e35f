import HubEngine
import HubTesting
import HubValue
import Testing

/// Each stateful operator, restored from a snapshot taken between two steps and then
/// continued, does exactly what an uninterrupted run does from there: the same events at
/// the same (virtual) times, and the same demand outstanding upstream after every step.
@Suite("Checkpoint: restore then continue equals an uninterrupted run")
struct OperatorRestoreTests {
    typealias Pub = AnyPublisher<Int, TestError>

    private static func state(_ registry: CheckpointRegistry, _ path: String = "op") -> OperatorState<Int> {
        OperatorState(slot: registry.slot(at: path), codec: .int)
    }

    /// Checks a scenario at every cut: the outcomes after it are equal, no state failed to restore.
    private static func check<Output: Equatable>(
        _ scenario: RestoreScenario<Int, Output>, _ steps: [ScenarioStep<Int>], cuts: ClosedRange<Int>? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for cut in cuts ?? 0...(steps.count - 1) {
            let result = scenario.run(steps, cut: cut)
            #expect(result.failures.isEmpty, "cut \(cut): \(result.failures)", sourceLocation: sourceLocation)
            #expect(result.restored.events == result.uninterrupted.events, "cut \(cut)", sourceLocation: sourceLocation)
            #expect(result.restored.outstanding == result.uninterrupted.outstanding, "cut \(cut): demand", sourceLocation: sourceLocation)
        }
    }

    @Test func scanKeepsItsAccumulator() {
        let scenario = RestoreScenario<Int, Int> { up, _, registry in
            up.scan(0, state: Self.state(registry)) { $0 + $1 }.eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .send(2), .send(3), .send(4)])
        // The snapshot holds the sum so far, as a versioned state of "scan".
        let snapshot = scenario.run([.send(5), .send(6), .send(7)], cut: 2).snapshot
        #expect(snapshot["op"] == ["op": "scan", "v": 1, "acc": 11])
    }

    @Test func scanWithFiniteDemand() {
        let scenario = RestoreScenario<Int, Int>(initialDemand: .max(2)) { up, _, registry in
            up.scan(0, state: Self.state(registry)) { $0 + $1 }.eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .request(2), .send(2), .send(3), .request(1), .send(4)])
    }

    @Test func tryScanKeepsItsAccumulatorAndFailsAlike() {
        let scenario = RestoreScenario<Int, Int> { up, _, registry in
            up.tryScan(0, state: Self.state(registry)) { acc, value in
                if value < 0 { throw TestError.oops }
                return acc * 2 + value
            }.mapError(TestError.recorded).eraseToAnyPublisher()
        }
        // Cut before the failure: a pipeline that failed is not resumed.
        Self.check(scenario, [.send(1), .send(2), .send(3), .send(-1), .send(4)], cuts: 0...3)
    }

    @Test func reducersKeepTheirResultSoFar() {
        let reduce = RestoreScenario<Int, Int> { up, _, registry in
            Publishers.Reduce(upstream: up, initial: 100, nextPartialResult: { $0 - $1 }, state: Self.state(registry))
                .eraseToAnyPublisher()
        }
        Self.check(reduce, [.send(1), .send(2), .send(3), .finish])
        let count = RestoreScenario<Int, Int> { up, _, registry in
            Publishers.Count(upstream: up, state: Self.state(registry)).eraseToAnyPublisher()
        }
        Self.check(count, [.send(1), .send(2), .send(3), .finish])
        let collect = RestoreScenario<Int, [Int]> { up, _, registry in
            Publishers.Collect(upstream: up, state: Self.state(registry)).eraseToAnyPublisher()
        }
        Self.check(collect, [.send(1), .send(2), .send(3), .finish])
        let maximum = RestoreScenario<Int, Int> { up, _, registry in
            Publishers.TryComparison(upstream: up, areInIncreasingOrder: { $0 < $1 }, state: Self.state(registry))
                .mapError(TestError.recorded).eraseToAnyPublisher()
        }
        Self.check(maximum, [.send(3), .send(7), .send(5), .finish])
        // A result held back for want of demand is delivered once asked for, as before.
        let held = RestoreScenario<Int, Int>(initialDemand: .none) { up, _, registry in
            Publishers.Count(upstream: up, state: Self.state(registry)).eraseToAnyPublisher()
        }
        Self.check(held, [.send(1), .send(2), .finish, .request(1)], cuts: 0...2)
    }

    @Test func removeDuplicatesRemembersThePreviousValue() {
        let scenario = RestoreScenario<Int, Int>(initialDemand: .max(3), perValue: .max(1)) { up, _, registry in
            Publishers.RemoveDuplicates(upstream: up, predicate: ==, state: Self.state(registry)).eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .send(1), .send(2), .send(2), .send(2), .send(1)])
    }

    @Test func collectByCountKeepsItsPartialArrayAndItsUpstreamDemand() {
        let scenario = RestoreScenario<Int, [Int]>(initialDemand: .max(1)) { up, _, registry in
            Publishers.CollectByCount(upstream: up, count: 3, state: Self.state(registry)).eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .send(2), .send(3), .request(1), .send(4), .send(5), .request(1), .send(6), .finish])
    }

    @Test func bufferKeepsItsValues() {
        for prefetch in [Publishers.PrefetchStrategy.keepFull, .byRequest] {
            let scenario = RestoreScenario<Int, Int>(initialDemand: .none) { up, _, registry in
                Publishers.Buffer(upstream: up, size: 3, prefetch: prefetch, whenFull: .dropOldest, state: Self.state(registry))
                    .eraseToAnyPublisher()
            }
            Self.check(scenario, [.send(1), .send(2), .request(1), .send(3), .send(4), .request(2), .send(5), .request(5)])
        }
    }

    @Test func debounceKeepsItsPendingValueAndTheTimeItHadLeft() {
        let scenario = RestoreScenario<Int, Int> { up, scheduler, registry in
            Publishers.Debounce(upstream: up, dueTime: .milliseconds(100), scheduler: scheduler, state: Self.state(registry))
                .eraseToAnyPublisher()
        }
        Self.check(scenario, [
            .send(1), .advance(.milliseconds(30)), .send(2), .advance(.milliseconds(60)), .advance(.milliseconds(60)),
            .send(3), .advance(.milliseconds(99)), .advance(.milliseconds(1)),
        ])
    }

    @Test func throttleKeepsItsScheduledValueAndWindow() {
        for latest in [true, false] {
            let scenario = RestoreScenario<Int, Int>(initialDemand: .max(3), perValue: .max(1)) { up, scheduler, registry in
                Publishers.Throttle(
                    upstream: up, interval: .milliseconds(100), scheduler: scheduler, latest: latest, state: Self.state(registry)
                ).eraseToAnyPublisher()
            }
            Self.check(scenario, [
                .send(1), .advance(.milliseconds(10)), .send(2), .advance(.milliseconds(20)), .send(3),
                .advance(.milliseconds(100)), .send(4), .advance(.milliseconds(50)), .send(5), .advance(.milliseconds(200)),
            ])
        }
    }

    @Test func delayKeepsItsValuesInFlightAndTheirDemand() {
        let scenario = RestoreScenario<Int, Int>(initialDemand: .max(4), perValue: .max(1)) { up, scheduler, registry in
            Publishers.Delay(upstream: up, interval: .milliseconds(100), scheduler: scheduler, state: Self.state(registry))
                .eraseToAnyPublisher()
        }
        Self.check(scenario, [
            .send(1), .advance(.milliseconds(40)), .send(2), .advance(.milliseconds(40)), .send(3),
            .advance(.milliseconds(40)), .send(4), .advance(.milliseconds(200)), .finish, .advance(.milliseconds(100)),
        ], cuts: 0...8)
    }

    @Test func collectByTimeKeepsItsValuesAndTheTimeToTheNextTick() {
        let byTime = RestoreScenario<Int, [Int]> { up, scheduler, registry in
            Publishers.CollectByTime(upstream: up, strategy: .byTime(scheduler, .milliseconds(100)), state: Self.state(registry))
                .eraseToAnyPublisher()
        }
        let steps: [ScenarioStep<Int>] = [
            .send(1), .advance(.milliseconds(30)), .send(2), .advance(.milliseconds(80)), .send(3), .send(4),
            .advance(.milliseconds(50)), .send(5), .advance(.milliseconds(100)),
        ]
        Self.check(byTime, steps)
        let byCount = RestoreScenario<Int, [Int]>(initialDemand: .max(2), perValue: .max(1)) { up, scheduler, registry in
            Publishers.CollectByTime(
                upstream: up, strategy: .byTimeOrCount(scheduler, .milliseconds(100), 2), state: Self.state(registry)
            ).eraseToAnyPublisher()
        }
        Self.check(byCount, steps)
    }

    @Test func combineLatestKeepsTheLatestValues() {
        // Even values go to the first input, odd ones to the second.
        for reduce in [false, true] {
            let scenario = RestoreScenario<Int, [Int]>(initialDemand: .max(2), perValue: .none) { up, _, registry in
                let shared = up.share()
                let inputs = [shared.filter { $0 % 2 == 0 }.eraseToAnyPublisher(), shared.filter { $0 % 2 != 0 }.eraseToAnyPublisher()]
                if reduce {
                    return Publishers.ReduceLatestMany(inputs, state: Self.state(registry)).map { $0.map { $0 ?? -1 } }
                        .eraseToAnyPublisher()
                }
                return Publishers.AccumulateLatestMany(inputs, state: Self.state(registry)).eraseToAnyPublisher()
            }
            Self.check(scenario, [.send(2), .send(4), .send(1), .send(6), .request(1), .send(3), .send(8), .request(2)])
        }
    }

    @Test func zipKeepsItsQueues() {
        let scenario = RestoreScenario<Int, [Int]> { up, _, registry in
            let shared = up.share()
            return Publishers.ZipMany(
                [shared.filter { $0 % 2 == 0 }.eraseToAnyPublisher(), shared.filter { $0 % 2 != 0 }.eraseToAnyPublisher()],
                state: Self.state(registry)
            ).eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(2), .send(4), .send(1), .send(6), .send(3), .send(5), .send(7), .send(8), .finish])
    }

    @Test func flatMapRebuildsItsInnerPublishersWithTheirOwnState() {
        // Each inner publisher delays its value by value × 10 ms: its own state, under its scope.
        let scenario = RestoreScenario<Int, Int> { up, scheduler, registry in
            Publishers.FlatMap(
                upstream: up, maxPublishers: .max(2),
                transform: { value in
                    // A cold source rebuilt on restore does not deliver again what it delivered.
                    Publishers.Delay(
                        upstream: Publishers.SkipOnRestore(
                            upstream: Just(value).setFailureType(to: TestError.self), state: registry.slot(at: "source")),
                        interval: .milliseconds(Int64(value) * 10), scheduler: scheduler, state: Self.state(registry, "inner"))
                },
                state: Self.state(registry), outputCodec: .int
            ).eraseToAnyPublisher()
        }
        // Two inner publishers at most: the upstream sends only what it was asked for.
        let steps: [ScenarioStep<Int>] = [
            .send(5), .advance(.milliseconds(10)), .send(3), .advance(.milliseconds(35)), .send(7),
            .advance(.milliseconds(10)), .send(1), .advance(.milliseconds(100)), .finish,
        ]
        Self.check(scenario, steps)
        // The snapshot holds the live inners' values and each inner's own state under its scope.
        let snapshot = scenario.run(steps, cut: 3).snapshot
        #expect(snapshot["op"]?["inners"] == [[0, 5], [1, 3]])
        #expect(snapshot["op/0/source"] == ["op": "source", "v": 1, "passed": 1])
        #expect(snapshot["op/0/inner"]?["op"] == "delay")
        #expect(snapshot["op/1/inner"]?["op"] == "delay")
    }

    @Test func prependIsNotPlayedAgainAfterItsPrefix() {
        let scenario = RestoreScenario<Int, Int> { up, _, registry in
            Publishers.Concatenate(
                prefix: Publishers.Sequence<[Int], TestError>(sequence: [0, -1]), suffix: up, state: registry.slot(at: "op")
            ).eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .send(2), .finish])
        #expect(scenario.run([.send(1)], cut: 0).snapshot["op"] == ["op": "concatenate", "v": 1, "phase": "suffix"])
    }

    @Test func timerKeepsItsPhase() {
        let scenario = RestoreScenario<Int, Int>(initialDemand: .max(3), perValue: .max(1)) { _, scheduler, registry in
            Publishers.Timer(every: .milliseconds(100), scheduler: scheduler, state: registry.slot(at: "op"))
                .map { Int($0.nanoseconds / 1_000_000) }.setFailureType(to: TestError.self).eraseToAnyPublisher()
        }
        // The ticks carry the scheduler's time: compare the times of the events, not their values.
        let steps: [ScenarioStep<Int>] = [.advance(.milliseconds(130)), .advance(.milliseconds(40)), .advance(.milliseconds(250))]
        for cut in 0..<steps.count {
            let result = scenario.run(steps, cut: cut)
            #expect(result.restored.events.map(\.at) == result.uninterrupted.events.map(\.at), "cut \(cut)")
        }
    }

    @Test func dropFirstAndOutputKeepTheirCount() {
        let drop = RestoreScenario<Int, Int>(initialDemand: .max(2), perValue: .max(1)) { up, _, registry in
            Publishers.Drop(upstream: up, count: 3, state: registry.slot(at: "op")).eraseToAnyPublisher()
        }
        Self.check(drop, [.send(1), .send(2), .send(3), .send(4), .send(5)])
        let output = RestoreScenario<Int, Int>(initialDemand: .max(5)) { up, _, registry in
            Publishers.Output(upstream: up, range: 2..<4, state: registry.slot(at: "op")).eraseToAnyPublisher()
        }
        Self.check(output, [.send(1), .send(2), .send(3), .send(4), .send(5)])
    }

    @Test func withLatestFromKeepsTheOtherLatestValue() {
        let scenario = RestoreScenario<Int, [Int]> { up, _, registry in
            let shared = up.share()
            return Publishers.WithLatestFrom(
                upstream: shared.filter { $0 % 2 != 0 }, other: shared.filter { $0 % 2 == 0 }, transform: { [$0, $1] },
                state: Self.state(registry)
            ).eraseToAnyPublisher()
        }
        Self.check(scenario, [.send(1), .send(2), .send(3), .send(5), .send(4), .send(7)])
    }

    @Test func aStateOfAnotherOperatorIsRefusedAndTheOperatorStartsAfresh() {
        let registry = CheckpointRegistry(restoring: ["op": ["op": "buffer", "v": 1, "values": []]])
        let upstream = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        upstream.scan(10, state: Self.state(registry)) { $0 + $1 }.subscribe(out)
        upstream.send(1)
        #expect(out.values == [11])
        #expect(registry.failures.map(\.code) == [.wrongOperator])
        #expect(registry.failures.first?.path == "op")
    }

    @Test func aStateOfAnotherVersionIsRefused() {
        let registry = CheckpointRegistry(restoring: ["op": ["op": "scan", "v": 2, "acc": 5]])
        let upstream = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        upstream.scan(10, state: Self.state(registry)) { $0 + $1 }.subscribe(out)
        upstream.send(1)
        #expect(out.values == [11])
        #expect(registry.failures.map(\.code) == [.unsupportedVersion])
    }

    @Test func aStateNotClaimedYetIsKeptInTheNextSnapshot() {
        let registry = CheckpointRegistry(restoring: ["later": ["op": "scan", "v": 1, "acc": 5]])
        #expect(registry.snapshot()["later"] == ["op": "scan", "v": 1, "acc": 5])
        let upstream = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        upstream.scan(0, state: Self.state(registry, "later")) { $0 + $1 }.subscribe(out)
        upstream.send(1)
        #expect(out.values == [6])
        #expect(!registry.hasUnclaimedStates)
    }
}
