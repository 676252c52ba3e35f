import Testing
import HubEngine
import HubTesting

/// `dropFirst`, `drop(while:)`, `tryDrop(while:)`, `prefix(_:)`, `prefix(while:)`,
/// `tryPrefix(while:)`, `output(at:)`, `output(in:)`.
@Suite("SequenceOperators: drop, prefix and output")
struct SeqOpsDropPrefixOutputTests {
    // MARK: dropFirst

    @Test func dropFirstRequestsCountExtraOnceThenPassesDemandThrough() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.dropFirst(2).record(initialDemand: .max(1))
        #expect(probe.requests == [.max(3)])
        #expect(probe.send(1) == .none)
        #expect(probe.send(2) == .none)
        #expect(recorder.events == [.subscription])
        probe.send(3)
        recorder.request(.max(2))
        #expect(probe.requests == [.max(3), .max(2)])
        probe.send(4)
        #expect(recorder.events == [.subscription, .value(3), .value(4)])
    }

    @Test func dropFirstWithoutDemandRequestsOnlyTheCount() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.dropFirst(3).record(initialDemand: .none)
        #expect(probe.requests == [.max(3)])
        recorder.request(.unlimited)
        #expect(probe.requests == [.max(3), .unlimited])
        let zero = DemandProbe<Int, TestError>()
        _ = zero.dropFirst(0).record(initialDemand: .none)
        #expect(zero.requests == [])
    }

    @Test func dropFirstDefaultDropsOne() {
        let recorder = [1, 2, 3].publisher.dropFirst().record()
        #expect(recorder.events == [.subscription, .value(2), .value(3), .finished])
    }

    @Test func dropFirstFailureAndCancel() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.dropFirst(1).record()
        probe.send(1)
        probe.send(completion: .failure(.oops))
        probe.send(2)
        #expect(recorder.events == [.subscription, .failure(.oops)])

        let other = DemandProbe<Int, TestError>()
        let second = other.dropFirst(1).record()
        second.cancel()
        second.cancel()
        #expect(other.cancellations == 1)
        other.send(1)
        other.send(2)
        #expect(second.events == [.subscription])
    }

    // MARK: drop(while:)

    @Test func dropWhileReplacesDroppedValuesByDemandOfOne() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.drop { $0 < 5 }.record(initialDemand: .max(2))
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(1) == .max(1))
        #expect(probe.send(6) == .none)
        #expect(probe.send(2) == .none)
        #expect(recorder.events == [.subscription, .value(6), .value(2)])
    }

    @Test func tryDropWhileFailsWithTheThrownErrorAndCancelsUpstream() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryDrop(while: SeqOpsPredicates.small).castToTestError().record(initialDemand: .max(5))
        probe.send(1)
        #expect(probe.send(7) == .none)
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .failure(.other(7))])
    }

    @Test func tryDropWhileStopsCallingThePredicateOnceItFails() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryDrop(while: SeqOpsPredicates.small).castToTestError().record()
        probe.send(1)
        probe.send(5)
        probe.send(7)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(5), .value(7), .failure(.oops)])
    }

    @Test func dropWhileCancel() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.drop { $0 < 5 }.record()
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(9)
        #expect(recorder.events == [.subscription])
    }

    // MARK: prefix(while:)

    @Test func prefixWhileFinishesOnTheFirstFailingValue() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.prefix { $0 < 5 }.record(initialDemand: .max(2), demandPerValue: .max(1))
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(1) == .max(1))
        #expect(probe.send(9) == .none)
        #expect(probe.cancellations == 1)
        probe.send(2)
        #expect(recorder.events == [.subscription, .value(1), .finished])
    }

    @Test func tryPrefixWhileFailsWithTheThrownError() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryPrefix(while: SeqOpsPredicates.small).castToTestError().record()
        probe.send(1)
        probe.send(7)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(7))])
    }

    @Test func prefixWhileForwardsFailureAndCancel() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.prefix { _ in true }.record()
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        recorder.cancel()
        #expect(probe.cancellations == 0)
    }

    // MARK: prefix(_:) / output

    @Test func prefixPassesDemandThroughAndFinishesOnTheNextValue() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.prefix(2).record(initialDemand: .max(1), demandPerValue: .max(1))
        #expect(probe.requests == [.max(1)])
        #expect(probe.send(1) == .max(1))
        #expect(probe.send(2) == .max(1))
        // As in Combine, the operator learns it is done from the next value.
        #expect(recorder.events == [.subscription, .value(1), .value(2)])
        #expect(probe.send(3) == .none)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func prefixFinishesWithTheUpstream() {
        let recorder = [1, 2].publisher.prefix(2).record()
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
        // Behind `Deferred` the generic operator applies: it waits for a fourth value.
        let three = Deferred { [1, 2, 3, 4].publisher }.prefix(3).record(initialDemand: .max(3))
        #expect(three.events == [.subscription, .value(1), .value(2), .value(3)])
        three.request(.max(1))
        #expect(three.events == [.subscription, .value(1), .value(2), .value(3), .finished])
    }

    @Test func sequencePublishersApplyTheOperatorsToTheSequenceAsInCombine() {
        let prefix: Publishers.Sequence<PrefixSequence<[Int]>, Never> = [1, 2, 3, 4].publisher.prefix(3)
        #expect(prefix.record(initialDemand: .max(3)).events == [.subscription, .value(1), .value(2), .value(3), .finished])
        let numbers: [Int] = [5, 6, 7]
        let first = [5, 6].publisher.first()
        #expect(first.output == 5)
        #expect(numbers.publisher.last().output == 7)
        #expect(numbers.publisher.last { $0 < 7 }.output == 6)
        #expect(numbers.publisher.first { $0 > 5 }.output == 6)
        #expect(numbers.publisher.output(at: 2).output == 7)
        #expect(numbers.publisher.output(at: 3).output == nil)
        #expect(numbers.publisher.output(in: 1..<9).sequence == [6, 7])
        #expect(Array(numbers.publisher.dropFirst().sequence) == [6, 7])
        #expect(Array(numbers.publisher.drop { $0 < 6 }.sequence) == [6, 7])
        #expect(numbers.publisher.prefix { $0 < 7 }.sequence == [5, 6])
        #expect([5, 6].publisher.prepend(3, 4).append([7]).append([8].publisher).sequence == [3, 4, 5, 6, 7, 8])
        // A failing sequence publisher keeps the generic first() (no Optional.Publisher for it).
        let failing = Publishers.Sequence<[Int], TestError>(sequence: [1, 2])
        #expect(failing.first().record().events == [.subscription, .value(1), .finished])
    }

    @Test func outputAtSkipsWithDemandOfOne() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.output(at: 2).record(initialDemand: .max(1))
        #expect(probe.requests == [.max(1)])
        #expect(probe.send(10) == .max(1))
        #expect(probe.send(11) == .max(1))
        #expect(probe.send(12) == .none)
        probe.send(13)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(12), .finished])
    }

    @Test func outputInRanges() {
        #expect([0, 1, 2, 3, 4, 5].publisher.output(in: 1..<3).record().values == [1, 2])
        #expect([0, 1, 2, 3, 4, 5].publisher.output(in: 1...3).record().values == [1, 2, 3])
        #expect([0, 1, 2, 3, 4, 5].publisher.output(in: 4...).record().values == [4, 5])
        #expect([0, 1, 2, 3, 4, 5].publisher.output(in: ..<2).record().values == [0, 1])
        #expect([0, 1, 2].publisher.output(in: 5...).record().events == [.subscription, .finished])
        #expect([0, 1, 2].publisher.output(in: 4...).range == 4 ..< Int.max)
    }

    @Test func outputFailureAndCancel() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.output(in: 1...2).record()
        probe.send(0)
        probe.send(completion: .failure(.oops))
        probe.send(1)
        #expect(recorder.events == [.subscription, .failure(.oops)])

        let other = DemandProbe<Int, TestError>()
        let second = other.prefix(3).record()
        other.send(1)
        second.cancel()
        second.cancel()
        other.send(2)
        #expect(other.cancellations == 1)
        #expect(second.events == [.subscription, .value(1)])
    }

    @Test func requestNoneIsANoOp() {
        let probe = DemandProbe<Int, TestError>()
        let recorders = [
            probe.dropFirst(1).record(initialDemand: .none),
            probe.prefix(1).record(initialDemand: .none),
            probe.drop { _ in true }.record(initialDemand: .none),
            probe.prefix { _ in true }.record(initialDemand: .none),
            probe.first().record(initialDemand: .none),
        ]
        let before = probe.requests
        for recorder in recorders { recorder.request(.none) }
        #expect(probe.requests == before)
    }
}
