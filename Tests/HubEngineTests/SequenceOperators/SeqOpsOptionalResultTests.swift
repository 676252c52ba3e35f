import Testing
import HubEngine

/// `Optional.Publisher` and `Result.Publisher`.
@Suite("SequenceOperators: Optional and Result publishers")
struct SeqOpsOptionalResultTests {
    @Test func optionalPublishesItsValueOnDemand() {
        let recorder = Optional(4).publisher.record(initialDemand: .none)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(4), .finished])
    }

    @Test func nilFinishesAtOnce() {
        let recorder = Optional<Int>.none.publisher.record(initialDemand: .none)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func optionalCancelAndNoneDemand() {
        let recorder = Optional(4).publisher.record(initialDemand: .none)
        recorder.request(.none)
        #expect(recorder.events == [.subscription])
        recorder.cancel()
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])
    }

    @Test func resultSuccessPublishesOnDemand() {
        let recorder = Result<Int, TestError>.success(6).publisher.record(initialDemand: .none)
        #expect(recorder.events == [.subscription])
        recorder.request(.unlimited)
        #expect(recorder.events == [.subscription, .value(6), .finished])
    }

    @Test func resultFailureFailsWithoutDemand() {
        let recorder = Result<Int, TestError>.failure(.oops).publisher.record(initialDemand: .none)
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func resultComposesWithTheSequenceOperators() {
        let recorder = Result<Int, TestError>.Publisher(3).append(Result<Int, TestError>.Publisher(.other(2))).record()
        #expect(recorder.events == [.subscription, .value(3), .failure(.other(2))])
        #expect(Optional(1).publisher.prepend(0).last().record().values == [1])
    }
}
