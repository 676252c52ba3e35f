import Testing
import HubEngine
import HubTesting

/// The one-for-one try-variants: a thrown error cancels upstream, fails downstream with that
/// error (as `any Error`), and nothing follows.
@Suite("TransformOperators: try-variants")
struct TryOperatorTests {
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: tryMap

    @Test func tryMapTransformsAndPassesDemandThrough() {
        let probe = Probe()
        let recorder = probe.tryMap { $0 * 10 }.recordThrowing(initialDemand: .max(2), demandPerValue: .max(1))
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(1) == .max(1))
        recorder.request(.max(3))
        #expect(probe.requests == [.max(2), .max(3)])
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(10), .finished])
        #expect(probe.cancellations == 0)
    }

    @Test func tryMapThrowCancelsUpstreamAndFailsWithTheThrownError() {
        let probe = Probe()
        let recorder = probe.tryMap { v -> Int in
            if v == 2 { throw TestError.other(v) }
            return v
        }.recordThrowing()
        probe.send(1)
        #expect(probe.send(2) == .none)
        #expect(probe.cancellations == 1)
        probe.send(3)
        probe.send(completion: .finished)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .failure(.other(2))])
        #expect(probe.requests == [.unlimited])
    }

    @Test func tryMapForwardsUpstreamFailureAsAnyError() {
        let probe = Probe()
        let recorder = probe.tryMap { $0 }.recordThrowing()
        probe.send(completion: .failure(.oops))
        probe.send(5)
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func tryMapCancelIsIdempotentAndStopsDelivery() {
        let probe = Probe()
        let recorder = probe.tryMap { $0 }.recordThrowing()
        probe.send(1)
        recorder.cancel()
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .finished)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1)])
        #expect(probe.requests == [.unlimited])
    }

    @Test func tryMapRequestNoneIsANoOp() {
        let probe = Probe()
        let recorder = probe.tryMap { $0 }.recordThrowing(initialDemand: .none)
        recorder.request(.none)
        #expect(probe.requests.isEmpty)
    }

    @Test func tryMapCancelFromInsideReceiveStopsEverything() {
        let probe = Probe()
        let recorder = ThrowingRecorder<Int>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] _ in
            recorder.cancel()
            return .max(5)
        }
        probe.tryMap { $0 }.subscribe(recorder)
        #expect(probe.send(1) == .none)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1)])
        #expect(probe.cancellations == 1)
    }

    @Test func tryMapOnASequenceStopsAtTheThrow() {
        let recorder = ThrowingRecorder<Int>(initialDemand: .unlimited)
        (1...5).publisher.tryMap { v -> Int in
            if v == 3 { throw TestError.other(3) }
            return v
        }.subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .failure(.other(3))])
    }

    @Test func adjacentMapsAndFiltersFuseIntoOneOperatorAsInCombine() {
        let probe = Probe()
        let mapped: Publishers.TryMap<Probe, String> = probe.map { $0 + 1 }.tryMap { $0 * 2 }.map { "\($0)" }
        let filtered: Publishers.TryFilter<Probe> = probe.filter { $0 > 0 }.tryFilter { $0 < 9 }.filter { $0 != 4 }
        let compacted: Publishers.CompactMap<Probe, Int> = probe.compactMap { $0 }.compactMap { $0 }.map { $0 }
        let tryCompacted: Publishers.TryCompactMap<Probe, Int> = probe.tryCompactMap { $0 }.compactMap { $0 }
        let recorder = mapped.recordThrowing()
        probe.send(3)
        #expect(recorder.events == [.subscription, .value("8")])
        #expect(filtered.upstream === probe && compacted.upstream === probe && tryCompacted.upstream === probe)
    }

    // MARK: tryFilter

    @Test func tryFilterGivesBackOneDemandPerDroppedValue() {
        let probe = Probe()
        let recorder = probe.tryFilter { $0.isMultiple(of: 2) }.recordThrowing(initialDemand: .max(1))
        #expect(probe.requests == [.max(1)])
        #expect(probe.send(1) == .max(1))
        #expect(probe.send(2) == .none)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(2), .finished])
    }

    @Test func tryFilterThrowCancelsUpstream() {
        let probe = Probe()
        let recorder = probe.tryFilter { v in
            if v < 0 { throw TestError.other(v) }
            return true
        }.recordThrowing()
        probe.send(4)
        probe.send(-3)
        probe.send(5)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(4), .failure(.other(-3))])
    }

    // MARK: tryCompactMap

    @Test func tryCompactMapDropsNilAndFailsOnThrow() {
        let probe = Probe()
        let recorder = probe.tryCompactMap { v -> String? in
            if v == 9 { throw TestError.other(9) }
            return v.isMultiple(of: 2) ? "\(v)" : nil
        }.recordThrowing(initialDemand: .max(2))
        #expect(probe.send(1) == .max(1))
        probe.send(2)
        probe.send(9)
        probe.send(4)
        #expect(probe.cancellations == 1)
        #expect(probe.requests == [.max(2)])
        #expect(recorder.events == [.subscription, .value("2"), .failure(.other(9))])
    }

    // MARK: tryScan

    @Test func tryScanAccumulatesAndFailsOnThrow() {
        let probe = Probe()
        let recorder = probe.tryScan(0) { acc, v in
            if acc + v > 5 { throw TestError.other(acc) }
            return acc + v
        }.recordThrowing(initialDemand: .max(1), demandPerValue: .max(1))
        #expect(probe.requests == [.max(1)])
        #expect(probe.send(1) == .max(1))
        probe.send(2)
        probe.send(3)
        probe.send(1)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1), .value(3), .failure(.other(3))])
    }

    @Test func tryScanStartsEachSubscriptionFromTheInitialResult() {
        let publisher = [1, 2, 3].publisher.tryScan(10) { $0 + $1 }
        let first = publisher.recordThrowing()
        let second = publisher.recordThrowing()
        #expect(first.events == [.subscription, .value(11), .value(13), .value(16), .finished])
        #expect(second.events == first.events)
    }

    // MARK: tryRemoveDuplicates

    @Test func tryRemoveDuplicatesDropsAndFailsOnThrow() {
        let probe = Probe()
        let recorder = probe.tryRemoveDuplicates { a, b in
            if b == 0 { throw TestError.other(a) }
            return a == b
        }.recordThrowing(initialDemand: .max(3))
        probe.send(1)
        #expect(probe.send(1) == .max(1))
        probe.send(2)
        probe.send(0)
        probe.send(7)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .failure(.other(2))])
    }

    @Test func tryRemoveDuplicatesDoesNotCallThePredicateForTheFirstValue() {
        var calls = 0
        let recorder = [5].publisher.tryRemoveDuplicates { _, _ in
            calls += 1
            throw TestError.oops
        }.recordThrowing()
        #expect(calls == 0)
        #expect(recorder.events == [.subscription, .value(5), .finished])
    }
}
