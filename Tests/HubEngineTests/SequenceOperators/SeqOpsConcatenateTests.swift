import Testing
import HubEngine
import HubTesting

/// `Publishers.Concatenate` behind `prepend` and `append`: order, demand hand-over, failure, cancel.
@Suite("SequenceOperators: concatenate, prepend, append")
struct SeqOpsConcatenateTests {
    @Test func outstandingDemandIsHandedOverToTheSuffix() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        let recorder = head.append(tail).record(initialDemand: .max(3))
        #expect(head.requests == [.max(3)])
        #expect(tail.subscriptions == 0)
        #expect(head.send(1) == .none)
        head.send(completion: .finished)
        #expect(tail.subscriptions == 1)
        #expect(tail.requests == [.max(2)])
        recorder.request(.max(4))
        #expect(tail.requests == [.max(2), .max(4)])
        #expect(head.requests == [.max(3)])
        tail.send(2)
        tail.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func demandReturnedFromValuesCountsForTheHandOver() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        _ = head.append(tail).record(initialDemand: .max(1), demandPerValue: .max(2))
        #expect(head.send(1) == .max(2))
        #expect(head.send(2) == .max(2))
        head.send(completion: .finished)
        #expect(tail.requests == [.max(3)])
    }

    @Test func noDemandAtHandOverRequestsNothing() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        let recorder = head.append(tail).record(initialDemand: .max(1))
        head.send(1)
        head.send(completion: .finished)
        #expect(tail.subscriptions == 1)
        #expect(tail.requests == [])
        recorder.request(.unlimited)
        #expect(tail.requests == [.unlimited])
    }

    @Test func aPrefixValueWithoutDemandIsDroppedAsInCombine() {
        let head = DemandProbe<Int, TestError>()
        let recorder = head.append(Empty<Int, TestError>()).record(initialDemand: .none)
        #expect(head.send(1) == .none)
        recorder.request(.max(1))
        head.send(2)
        #expect(recorder.events == [.subscription, .value(2)])
    }

    @Test func prefixFailureEndsEverythingWithoutSubscribingTheSuffix() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        let recorder = head.append(tail).record()
        head.send(1)
        head.send(completion: .failure(.oops))
        #expect(tail.subscriptions == 0)
        #expect(recorder.events == [.subscription, .value(1), .failure(.oops)])
    }

    @Test func suffixFailureIsDelivered() {
        let recorder = [1, 2].publisher.setFailureTypeForSeqOps()
            .append(Fail<Int, TestError>(error: .other(5))).record()
        #expect(recorder.events == [.subscription, .value(1), .value(2), .failure(.other(5))])
    }

    @Test func cancelDuringThePrefixCancelsItAndNeverSubscribesTheSuffix() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        let recorder = head.append(tail).record()
        recorder.cancel()
        recorder.cancel()
        #expect(head.cancellations == 1)
        head.send(1)
        head.send(completion: .finished)
        #expect(tail.subscriptions == 0)
        #expect(recorder.events == [.subscription])
    }

    @Test func cancelDuringTheSuffixCancelsIt() {
        let head = DemandProbe<Int, TestError>()
        let tail = DemandProbe<Int, TestError>()
        let recorder = head.append(tail).record()
        head.send(completion: .finished)
        recorder.cancel()
        #expect(head.cancellations == 0)
        #expect(tail.cancellations == 1)
        tail.send(3)
        tail.send(completion: .finished)
        #expect(recorder.events == [.subscription])
    }

    @Test func prependValuesHandsOverInsideTheSameRequest() {
        let probe = DemandProbe<Int, Never>()
        let recorder = probe.prepend(1, 2, 3).record(initialDemand: .max(4))
        #expect(recorder.values == [1, 2, 3])
        #expect(probe.requests == [.max(1)])
        probe.send(4)
        #expect(recorder.values == [1, 2, 3, 4])
    }

    @Test func prependAndAppendOrder() {
        #expect([3, 4].publisher.prepend([1, 2]).record().values == [1, 2, 3, 4])
        #expect([3, 4].publisher.prepend([1, 2].publisher).append(5, 6).record().values == [1, 2, 3, 4, 5, 6])
        #expect([1].publisher.append([2, 3]).append([4].publisher).record().events
            == [.subscription, .value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func stepByStepDemandAcrossTheBoundary() {
        let recorder = [1, 2].publisher.append([3, 4]).record(initialDemand: .max(1))
        #expect(recorder.values == [1])
        recorder.request(.max(2))
        #expect(recorder.values == [1, 2, 3])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func reentrantRequestFromReceiveCrossesTheBoundary() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        [1, 2].publisher.append(3, 4).subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .value(4), .finished])
    }
}

extension Publishers.Sequence where Failure == Never {
    /// The same sequence with `TestError` as its failure type.
    func setFailureTypeForSeqOps() -> Publishers.Sequence<Elements, TestError> {
        Publishers.Sequence(sequence: sequence)
    }
}
