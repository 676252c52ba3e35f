import Testing
import HubEngine
import HubTesting

@Suite("CombiningOperators: withLatestFrom")
struct WithLatestFromTests {
    typealias Subject = HubEngine.PassthroughSubject<Int, TestError>

    /// a: -1---2----3-4-|
    /// b: ---10---20------
    /// =: -----(2,10)-(3,20)-(4,20)-|
    @Test func pairsEachValueWithTheOthersLatest() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.withLatestFrom(b) { [$0, $1] }.record()
        a.send(1)
        b.send(10)
        a.send(2)
        b.send(20)
        b.send(30)
        a.send(3)
        b.send(completion: .finished)
        a.send(4)
        #expect(recorder.values == [[2, 10], [3, 30], [4, 30]], "values before the other's first are dropped; its end freezes its latest")
        a.send(completion: .finished)
        #expect(recorder.events.last == .finished)
        #expect(b.subscriberCount == 0)
    }

    @Test func demandGoesToTheUpstreamAndADroppedValueIsReplaced() {
        let a = DemandProbe<Int, TestError>()
        let b = DemandProbe<Int, TestError>()
        let recorder = a.withLatestFrom(b) { $0 + $1 }.record(initialDemand: .max(2))
        #expect(b.requests == [.unlimited])
        #expect(a.requests == [.max(2)])
        #expect(a.send(1) == .max(1), "no latest yet: dropped, one more asked for")
        _ = b.send(100)
        #expect(a.send(2) == .none)
        #expect(recorder.values == [102])
    }

    @Test func aFailureOfEitherFails() {
        let (a, b) = (Subject(), Subject())
        let recorder = a.withLatestFrom(b) { [$0, $1] }.record()
        b.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(a.subscriberCount == 0)
        let synchronous = Just(1).setFailureType(to: TestError.self).withLatestFrom(Just(5).setFailureType(to: TestError.self)) { [$0, $1] }.record()
        #expect(synchronous.events == [.subscription, .value([1, 5]), .finished], "the other is subscribed first")
    }
}
