import Testing
import HubEngine
import HubTesting

@Suite("Timing: buffer")
struct TimingBufferTests {
    @Test func keepFullPrefetchesSizeThenOnePerDeliveredValue() {
        let source = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        source.buffer(size: 3, prefetch: .keepFull, whenFull: .dropNewest).subscribe(out)
        #expect(source.requests == [.max(3)])
        #expect(source.send(1) == .none)
        #expect(source.send(2) == .none)
        out.request(.max(1))
        #expect(out.values == [1])
        #expect(source.requests == [.max(3), .max(1)])
        // A value that meets demand goes straight through and frees one more upstream slot.
        out.request(.max(2))
        #expect(out.values == [1, 2])
        #expect(source.send(3) == .max(1))
        #expect(out.values == [1, 2, 3])
    }

    @Test func byRequestAsksForEverything() {
        let source = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        source.buffer(size: 2, prefetch: .byRequest, whenFull: .dropNewest).subscribe(out)
        #expect(source.requests == [.unlimited])
        #expect(source.send(1) == .none)
        #expect(out.values == [1])
    }

    @Test func dropNewestAndDropOldest() {
        for (strategy, expected) in [(Publishers.BufferingStrategy<TestError>.dropNewest, [1, 2]), (.dropOldest, [3, 4])] {
            let source = HubEngine.PassthroughSubject<Int, TestError>()
            let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
            source.buffer(size: 2, prefetch: .byRequest, whenFull: strategy).subscribe(out)
            for value in 1...4 { source.send(value) }
            out.request(.unlimited)
            #expect(out.values == expected)
        }
    }

    @Test func customErrorCancelsUpstreamAndFailsOnTheNextDrain() {
        let source = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        source.buffer(size: 1, prefetch: .keepFull, whenFull: .customError({ .other(9) })).subscribe(out)
        source.send(1)
        source.send(2)
        #expect(source.cancellations == 1)
        // As OpenCombine: the error waits for the next drain (here the next request), after what the demand takes.
        #expect(out.events == [.subscription])
        out.request(.max(1))
        #expect(out.events == [.subscription, .value(1), .failure(.other(9))])
    }

    @Test func finishedWaitsBehindTheBufferAndForDemand() {
        let source = HubEngine.PassthroughSubject<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        source.buffer(size: 4, prefetch: .byRequest, whenFull: .dropNewest).subscribe(out)
        source.send(1)
        source.send(completion: .finished)
        #expect(out.events == [.subscription])
        out.request(.max(1))
        #expect(out.events == [.subscription, .value(1)])
        out.request(.max(1))
        #expect(out.events == [.subscription, .value(1), .finished])
    }

    @Test func failureOvertakesTheBufferWithoutDemand() {
        let source = HubEngine.PassthroughSubject<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        source.buffer(size: 4, prefetch: .byRequest, whenFull: .dropNewest).subscribe(out)
        source.send(1)
        source.send(completion: .failure(.oops))
        #expect(out.events == [.subscription, .failure(.oops)])
    }

    @Test func cancelDropsTheBufferAndCancelsUpstream() {
        let source = DemandProbe<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        source.buffer(size: 4, prefetch: .keepFull, whenFull: .dropNewest).subscribe(out)
        source.send(1)
        out.cancel()
        out.cancel()
        #expect(source.cancellations == 1)
        out.request(.max(1))
        source.send(2)
        #expect(out.events == [.subscription])
    }

    @Test func cancelFromInsideReceiveStopsDelivery() {
        let source = HubEngine.PassthroughSubject<Int, TestError>()
        let out = RecordingSubscriber<Int, TestError>(initialDemand: .none)
        out.onValue = { _ in out.cancel(); return .none }
        source.buffer(size: 4, prefetch: .byRequest, whenFull: .dropNewest).subscribe(out)
        source.send(1)
        source.send(2)
        out.request(.max(2))
        #expect(out.values == [1])
    }
}
