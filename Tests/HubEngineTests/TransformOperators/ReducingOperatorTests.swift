import Testing
import HubEngine
import HubTesting

/// A subscriber that never asks for anything by itself and counts what it is given, whatever the
/// operator's output and failure types; the test drives its demand.
private final class Quiet<Input, Failure: Error>: Subscriber {
    private(set) var subscription: (any Subscription)?
    private(set) var values = 0
    private(set) var completions = 0
    func receive(subscription: any Subscription) { self.subscription = subscription }
    func receive(_ input: Input) -> Subscribers.Demand {
        values += 1
        return .none
    }
    func receive(completion: Subscribers.Completion<Failure>) { completions += 1 }
    var deliveries: Int { values + completions }
}

/// Every reducing operator, attached to a probe, behind one face for the shared demand tests.
enum ReducerCase: String, CaseIterable, CustomTestStringConvertible {
    case reduce, tryReduce, count, collect, min, max, minBy, maxBy, tryMin, tryMax
    case allSatisfy, tryAllSatisfy, contains, containsWhere, tryContains, ignoreOutput

    var testDescription: String { rawValue }

    /// The cases that stand between upstream and downstream with their own subscription: all but
    /// `ignoreOutput`, which (as in Combine) hands the upstream subscription to the downstream.
    static var withOwnSubscription: [ReducerCase] { allCases.filter { $0 != .ignoreOutput } }

    struct Handle {
        let request: (Subscribers.Demand) -> Void
        let cancel: () -> Void
        let deliveries: () -> Int
        let values: () -> Int
    }

    func attach(to probe: DemandProbe<Int, TestError>) -> Handle {
        switch self {
        case .reduce: return Self.handle(probe.reduce(0, +))
        case .tryReduce: return Self.handle(probe.tryReduce(0) { $0 + $1 })
        case .count: return Self.handle(probe.count())
        case .collect: return Self.handle(probe.collect())
        case .min: return Self.handle(probe.min())
        case .max: return Self.handle(probe.max())
        case .minBy: return Self.handle(probe.min(by: <))
        case .maxBy: return Self.handle(probe.max(by: <))
        case .tryMin: return Self.handle(probe.tryMin(by: <))
        case .tryMax: return Self.handle(probe.tryMax(by: <))
        case .allSatisfy: return Self.handle(probe.allSatisfy { $0 < 100 })
        case .tryAllSatisfy: return Self.handle(probe.tryAllSatisfy { $0 < 100 })
        case .contains: return Self.handle(probe.contains(100))
        case .containsWhere: return Self.handle(probe.contains { $0 > 100 })
        case .tryContains: return Self.handle(probe.tryContains { $0 > 100 })
        case .ignoreOutput: return Self.handle(probe.ignoreOutput())
        }
    }

    private static func handle<P: Publisher>(_ publisher: P) -> Handle {
        let quiet = Quiet<P.Output, P.Failure>()
        publisher.subscribe(quiet)
        return Handle(
            request: { quiet.subscription?.request($0) },
            cancel: { quiet.subscription?.cancel() },
            deliveries: { quiet.deliveries },
            values: { quiet.values })
    }
}

@Suite("TransformOperators: reducing operators")
struct ReducingOperatorTests {
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: demand and cancellation, for every reducing operator

    @Test(arguments: ReducerCase.withOwnSubscription)
    func requestsUnlimitedUpstreamAtSubscriptionWithoutDownstreamDemand(_ reducer: ReducerCase) {
        let probe = Probe()
        let handle = reducer.attach(to: probe)
        #expect(probe.requests == [.unlimited])
        probe.send(1)
        probe.send(2)
        #expect(handle.deliveries() == 0)
        // Later downstream demand is not forwarded: upstream already has all it can get.
        handle.request(.max(1))
        #expect(probe.requests == [.unlimited])
    }

    @Test(arguments: ReducerCase.withOwnSubscription)
    func holdsTheResultUntilTheDownstreamRequests(_ reducer: ReducerCase) {
        let probe = Probe()
        let handle = reducer.attach(to: probe)
        probe.send(3)
        probe.send(1)
        probe.send(completion: .finished)
        #expect(handle.deliveries() == 0)
        handle.request(.none)
        #expect(handle.deliveries() == 0)
        handle.request(.max(1))
        #expect(handle.values() == 1)
        #expect(handle.deliveries() == 2)
        handle.request(.max(1))
        #expect(handle.deliveries() == 2)
    }

    @Test(arguments: ReducerCase.withOwnSubscription)
    func cancellingAfterTheUpstreamEndedDropsTheHeldResult(_ reducer: ReducerCase) {
        let probe = Probe()
        let handle = reducer.attach(to: probe)
        probe.send(3)
        probe.send(completion: .finished)
        handle.cancel()
        handle.request(.max(1))
        #expect(handle.deliveries() == 0)
    }

    @Test(arguments: ReducerCase.withOwnSubscription)
    func cancelReachesUpstreamOnceAndStopsDelivery(_ reducer: ReducerCase) {
        let probe = Probe()
        let handle = reducer.attach(to: probe)
        handle.request(.max(1))
        probe.send(1)
        handle.cancel()
        handle.cancel()
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .finished)
        handle.request(.max(1))
        #expect(handle.deliveries() == 0)
    }

    @Test(arguments: ReducerCase.allCases)
    func failureIsDeliveredWithoutDemand(_ reducer: ReducerCase) {
        let probe = Probe()
        let handle = reducer.attach(to: probe)
        probe.send(1)
        probe.send(completion: .failure(.oops))
        #expect(handle.values() == 0)
        #expect(handle.deliveries() == 1)
        handle.request(.max(1))
        #expect(handle.deliveries() == 1)
        #expect(probe.cancellations == 0)
    }

    // MARK: histories

    @Test func reduceFoldsInOrder() {
        let probe = Probe()
        let recorder = probe.reduce("") { $0 + "\($1)" }.record(initialDemand: .max(1))
        probe.send(1)
        probe.send(2)
        probe.send(3)
        #expect(recorder.events == [.subscription])
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value("123"), .finished])
    }

    @Test func reduceOfAnEmptyUpstreamEmitsTheInitialValue() {
        let recorder = [Int]().publisher.reduce(42, +).record()
        #expect(recorder.events == [.subscription, .value(42), .finished])
    }

    @Test func tryReduceThrowCancelsUpstreamAndFailsAtOnce() {
        let probe = Probe()
        let recorder = probe.tryReduce(0) { acc, v in
            if v < 0 { throw TestError.other(acc) }
            return acc + v
        }.recordThrowing(initialDemand: .none)
        probe.send(4)
        probe.send(-1)
        #expect(probe.cancellations == 1)
        probe.send(5)
        probe.send(completion: .finished)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .failure(.other(4))])
    }

    @Test func countCountsValues() {
        let probe = Probe()
        let recorder = probe.count().record(initialDemand: .max(1))
        for v in 0..<5 { probe.send(v) }
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(5), .finished])
    }

    @Test func collectGathersEverythingAndDiscardsItOnFailure() {
        let finished = [1, 2, 3].publisher.collect().record(initialDemand: .max(1))
        #expect(finished.events == [.subscription, .value([1, 2, 3]), .finished])

        let probe = Probe()
        let failed = probe.collect().record()
        probe.send(1)
        probe.send(completion: .failure(.oops))
        #expect(failed.events == [.subscription, .failure(.oops)])
    }

    @Test func collectOnAnEmptyUpstreamEmitsAnEmptyArray() {
        let recorder = [Int]().publisher.collect().record()
        #expect(recorder.events == [.subscription, .value([]), .finished])
    }

    @Test func minAndMaxKeepTheFirstOfEqualValues() {
        struct Item: Equatable { let key: Int; let tag: String }
        let items = [Item(key: 2, tag: "a"), Item(key: 1, tag: "b"), Item(key: 1, tag: "c"),
                     Item(key: 3, tag: "d"), Item(key: 3, tag: "e")]
        #expect(items.publisher.min { $0.key < $1.key }.record().values == [Item(key: 1, tag: "b")])
        #expect(items.publisher.max { $0.key < $1.key }.record().values == [Item(key: 3, tag: "d")])
        #expect([4, 9, 2].publisher.min().record().values == [2])
        #expect([4, 9, 2].publisher.max().record().values == [9])
    }

    @Test func minOfAnEmptyUpstreamOnlyFinishes() {
        let recorder = [Int]().publisher.min().record()
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func tryMinAndTryMaxFailOnThrow() {
        let probe = Probe()
        // tryMin hands the new value first: (new, current).
        let recorder = probe.tryMin { a, b in
            if a == 0 || b == 0 { throw TestError.other(a + b) }
            return a < b
        }.recordThrowing()
        probe.send(5)
        probe.send(3)
        probe.send(0)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.other(3))])

        let max = [1, 7, 3].publisher.tryMax { $0 < $1 }.recordThrowing()
        #expect(max.events == [.subscription, .value(7), .finished])
    }

    @Test func allSatisfyDecidesEarlyAndCancelsUpstream() {
        let probe = Probe()
        let recorder = probe.allSatisfy { $0 > 0 }.record(initialDemand: .none)
        probe.send(1)
        probe.send(0)
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(false), .finished])
    }

    @Test func allSatisfyIsTrueWhenEveryValuePasses() {
        #expect([1, 2].publisher.allSatisfy { $0 > 0 }.record().values == [true])
        #expect([Int]().publisher.allSatisfy { $0 > 0 }.record().values == [true])
    }

    @Test func tryAllSatisfyFailsOnThrow() {
        let probe = Probe()
        let recorder = probe.tryAllSatisfy { v in
            if v == 3 { throw TestError.other(3) }
            return true
        }.recordThrowing(initialDemand: .none)
        probe.send(1)
        probe.send(3)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.other(3))])
    }

    @Test func containsDecidesEarlyAndCancelsUpstream() {
        let probe = Probe()
        let recorder = probe.contains(4).record(initialDemand: .max(1))
        probe.send(1)
        #expect(recorder.events == [.subscription])
        probe.send(4)
        #expect(probe.cancellations == 1)
        probe.send(5)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(true), .finished])
    }

    @Test func containsIsFalseWhenTheUpstreamEndsWithoutAMatch() {
        #expect([1, 2].publisher.contains(3).record().events == [.subscription, .value(false), .finished])
        #expect([1, 2].publisher.contains { $0 > 5 }.record().values == [false])
    }

    @Test func containsStopsAnEndlessSequence() {
        let recorder = (1...).publisher.contains(where: { $0 == 1_000 }).record()
        #expect(recorder.events == [.subscription, .value(true), .finished])
    }

    @Test func tryContainsFailsOnThrowAndFindsOtherwise() {
        let probe = Probe()
        let recorder = probe.tryContains { v in
            if v < 0 { throw TestError.other(v) }
            return v == 9
        }.recordThrowing()
        probe.send(1)
        probe.send(-2)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.other(-2))])
        #expect([3, 9].publisher.tryContains { $0 == 9 }.recordThrowing().values == [true])
    }

    @Test func ignoreOutputPassesOnlyTheCompletion() {
        let probe = Probe()
        let recorder = RecordingSubscriber<Never, TestError>(initialDemand: .none)
        probe.ignoreOutput().subscribe(recorder)
        #expect(probe.requests == [.unlimited])
        #expect(probe.send(1) == .none)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func ignoreOutputCancelReachesUpstreamAndStopsDelivery() {
        let subject = PassthroughSubject<Int, TestError>()
        let recorder = RecordingSubscriber<Never, TestError>(initialDemand: .none)
        let probe = Probe()
        probe.ignoreOutput().subscribe(recorder)
        recorder.cancel()
        #expect(probe.cancellations == 1)

        let live = RecordingSubscriber<Never, TestError>(initialDemand: .none)
        subject.ignoreOutput().subscribe(live)
        subject.send(1)
        live.cancel()
        subject.send(completion: .finished)
        #expect(live.events == [.subscription])
    }

    @Test func reducingOperatorsWorkWithDemandRequestedInsideReceiveSubscription() {
        let recorder = (1...4).publisher.reduce(0, +).record(initialDemand: .max(1))
        #expect(recorder.events == [.subscription, .value(10), .finished])
    }
}

