import HubEngine
import Testing
import HubTesting

/// `first`, `first(where:)`, `tryFirst(where:)`, `last`, `last(where:)`, `tryLast(where:)`.
@Suite("SequenceOperators: first and last")
struct SeqOpsFirstLastTests {
    @Test func firstRequestsUnlimitedUpstreamForASmallDemand() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first().record(initialDemand: .max(1))
        #expect(probe.requests == [.unlimited])
        #expect(probe.send(4) == .none)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(4), .finished])
    }

    @Test func firstWaitsForDemandBeforeDeliveringItsValue() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first().record(initialDemand: .none)
        #expect(probe.requests == [.unlimited])
        probe.send(4)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(4), .finished])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(4), .finished])
    }

    @Test func firstOfAnEmptyUpstreamFinishesOnceAsked() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first().record(initialDemand: .none)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(3))
        #expect(recorder.events == [.subscription, .finished])
        #expect(probe.cancellations == 0)
    }

    @Test func firstFailsAtOnceWithoutDemand() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first().record(initialDemand: .none)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        recorder.request(.max(1))
        probe.send(1)
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func firstCancelStopsEverythingEvenAPendingResult() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first().record(initialDemand: .none)
        probe.send(8)
        recorder.cancel()
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])

        let other = DemandProbe<Int, TestError>()
        let second = other.first().record(initialDemand: .none)
        second.cancel()
        second.cancel()
        #expect(other.cancellations == 1)
        other.send(1)
        other.send(completion: .finished)
        second.request(.max(1))
        #expect(second.events == [.subscription])
    }

    @Test func firstWhereSkipsUntilAMatch() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.first { $0 > 2 }.record(initialDemand: .max(1))
        #expect(probe.send(1) == .none)
        #expect(probe.send(2) == .none)
        #expect(probe.cancellations == 0)
        probe.send(3)
        probe.send(4)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(3), .finished])
    }

    @Test func firstWhereWithoutMatchFinishesEmpty() {
        let recorder = [1, 2].publisher.first { $0 > 5 }.record(initialDemand: .max(1))
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func tryFirstWhereFailsWithTheThrownErrorAndCancelsUpstream() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryFirst { try !SeqOpsPredicates.small($0) }.castToTestError().record(initialDemand: .none)
        #expect(probe.requests == [.unlimited])
        probe.send(1)
        probe.send(7)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.other(7))])
        probe.send(9)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .failure(.other(7))])
    }

    @Test func tryFirstWhereForwardsUpstreamFailure() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryFirst { _ in false }.castToTestError().record()
        probe.send(completion: .failure(.other(3)))
        #expect(recorder.events == [.subscription, .failure(.other(3))])
    }

    @Test func lastRequestsUnlimitedAndDeliversTheLastValueOnFinish() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.last().record(initialDemand: .max(1))
        #expect(probe.requests == [.unlimited])
        for value in [3, 1, 4] { #expect(probe.send(value) == .none) }
        #expect(recorder.events == [.subscription])
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(4), .finished])
        #expect(probe.cancellations == 0)
    }

    @Test func lastWaitsForDemandAfterUpstreamFinished() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.last().record(initialDemand: .none)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(2), .finished])
    }

    @Test func lastDropsTheValueOnFailure() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.last().record()
        probe.send(2)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func lastCancelCancelsUpstream() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.last().record()
        probe.send(2)
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription])
    }

    @Test func lastWhereKeepsTheLastMatch() {
        let recorder = [1, 2, 3, 4, 5].publisher.last { $0 % 2 == 0 }.record(initialDemand: .max(1))
        #expect(recorder.events == [.subscription, .value(4), .finished])
    }

    @Test func tryLastWhereFailsWithTheThrownError() {
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.tryLast(where: SeqOpsPredicates.small).castToTestError().record()
        probe.send(1)
        probe.send(7)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.other(7))])
    }

    @Test func firstOfASynchronousSequenceWithReentrantRequest() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        (5..<100).publisher.first().subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(5), .finished])
    }
}
