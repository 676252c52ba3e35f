import Testing
import HubEngine
import HubTesting

@Suite("Seeds: wait(untilOutputFrom:)")
struct WaitUntilOutputTests {
    @Test func holdsTheUpstreamSubscriptionUntilTheSignalEmits() {
        let trigger = Trigger()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.wait(untilOutputFrom: trigger.signal()).record(initialDemand: .max(2))
        #expect(probe.subscriptions == 0)
        trigger.activate(for: 0)
        #expect(probe.subscriptions == 0, "a keyed activation does not release an unkeyed signal")
        trigger.activate()
        #expect(probe.subscriptions == 1)
        #expect(probe.requests == [.max(2)])
        probe.send(1)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func signalIsAskedForOneValueAndCancelledWhenItEmits() {
        let signal = DemandProbe<Void, Never>()
        let probe = DemandProbe<Int, TestError>()
        _ = probe.wait(untilOutputFrom: signal).record(initialDemand: .none)
        #expect(signal.requests == [.max(1)])
        #expect(signal.cancellations == 0)
        signal.send(())
        #expect(signal.cancellations == 1)
        #expect(probe.subscriptions == 1)
        #expect(probe.requests.isEmpty, "no downstream demand, no upstream demand")
        signal.send(())
        #expect(probe.subscriptions == 1, "the signal releases the upstream once")
    }

    @Test func demandRequestedWhileWaitingIsSummedThenPassesThrough() {
        let trigger = Trigger()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.wait(untilOutputFrom: trigger.signal()).record(initialDemand: .max(1))
        recorder.request(.max(2))
        trigger.activate()
        #expect(probe.requests == [.max(3)])
        recorder.request(.max(4))
        #expect(probe.requests == [.max(3), .max(4)])
        #expect(probe.send(7) == .none)
        #expect(recorder.values == [7])
    }

    @Test func demandReturnedFromReceiveGoesBackUpstream() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
        (1...4).publisher.wait(untilOutputFrom: trigger.signal()).subscribe(recorder)
        #expect(recorder.events == [.subscription])
        trigger.activate()
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .value(4), .finished])
    }

    @Test func smallDemandStaysSmall() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
        (1...10).publisher.wait(untilOutputFrom: trigger.signal()).subscribe(recorder)
        trigger.activate()
        #expect(recorder.values == [1, 2])
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func cancelWhileWaitingCancelsTheSignal() {
        let trigger = Trigger()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.wait(untilOutputFrom: trigger.signal(activatedBy: "go")).record()
        #expect(trigger.subscriberCount(for: "go") == 1)
        recorder.cancel()
        #expect(trigger.subscriberCount(for: "go") == 0)
        trigger.activate(for: "go")
        #expect(probe.subscriptions == 0)
        #expect(recorder.events == [.subscription])
        let signal = DemandProbe<Void, Never>()
        let other = probe.wait(untilOutputFrom: signal).record()
        other.cancel()
        other.cancel()
        #expect(signal.cancellations == 1)
    }

    @Test func cancelAfterReleaseCancelsTheUpstreamAndDeliversNothingMore() {
        let trigger = Trigger()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.wait(untilOutputFrom: trigger.signal()).record()
        trigger.activate()
        probe.send(1)
        recorder.cancel()
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(2)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func upstreamFailureIsForwarded() {
        let trigger = Trigger()
        let recorder = Fail<Int, TestError>(error: .oops).wait(untilOutputFrom: trigger.signal()).record()
        #expect(recorder.events == [.subscription])
        trigger.activate()
        #expect(recorder.events == [.subscription, .failure(.oops)])
    }

    @Test func signalFinishingWithoutOutputLeavesItWaiting() {
        let signal = PassthroughSubject<Void, Never>()
        let probe = DemandProbe<Int, TestError>()
        let recorder = probe.wait(untilOutputFrom: signal).record()
        signal.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        #expect(probe.subscriptions == 0)
    }

    @Test func synchronousSignalReleasesAtOnce() {
        let recorder = Just(5).wait(untilOutputFrom: Just(())).record()
        #expect(recorder.events == [.subscription, .value(5), .finished])
    }

    @Test func reentrantCancelAndActivationFromReceive() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] value in
            trigger.activate()
            if value == 2 { recorder.cancel() }
            return .none
        }
        (1...5).publisher.wait(untilOutputFrom: trigger.signal()).subscribe(recorder)
        trigger.activate()
        #expect(recorder.events == [.subscription, .value(1), .value(2)])
    }

    /// The article's paginated publisher: the first page at once, each further page on activation.
    @Test func paginatedPublisherDeliversPageAfterPageOnActivate() {
        let trigger = Trigger()
        let source = SeedPagedSource(pageCount: 3)
        let recorder = source.pages(paginatedBy: trigger.signal(activatedBy: "more")).record()
        #expect(recorder.events == [.subscription, .value(SeedPage(items: [0, 1], next: 1))])
        #expect(source.fetches == [0], "the next page is not fetched before it is asked for")
        trigger.activate(for: "other")
        #expect(recorder.values.count == 1)
        trigger.activate(for: "more")
        #expect(recorder.values.last == SeedPage(items: [2, 3], next: 2))
        #expect(source.fetches == [0, 1])
        trigger.activate(for: "more")
        #expect(recorder.events == [
            .subscription,
            .value(SeedPage(items: [0, 1], next: 1)),
            .value(SeedPage(items: [2, 3], next: 2)),
            .value(SeedPage(items: [4, 5], next: nil)),
            .finished,
        ])
        trigger.activate(for: "more")
        #expect(source.fetches == [0, 1, 2])
        #expect(trigger.subscriberCount(for: "more") == 0)
    }

    @Test func paginatedPublisherWithoutPaginatorDeliversTheFirstPageOnly() {
        let source = SeedPagedSource(pageCount: 3)
        let recorder = source.pages(paginatedBy: nil).record()
        #expect(recorder.events == [.subscription, .value(SeedPage(items: [0, 1], next: 1)), .finished])
    }

    @Test func paginatedPublisherHonoursDemandAndScanGathersPages() {
        let trigger = Trigger()
        let source = SeedPagedSource(pageCount: 4, pageSize: 1)
        let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .max(1))
        source.pages(paginatedBy: trigger.signal()).map(\.items).scan([], +).subscribe(recorder)
        #expect(recorder.values == [[0]])
        trigger.activate()
        #expect(recorder.values == [[0]], "the page waits for demand")
        recorder.request(.max(5))
        #expect(recorder.values == [[0], [0, 1]])
        trigger.activate()
        trigger.activate()
        #expect(recorder.values == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]])
        #expect(recorder.isCompleted)
    }

    @Test func cancellingAPaginatedPublisherStopsItsSignal() {
        let trigger = Trigger()
        let source = SeedPagedSource(pageCount: 5)
        let recorder = source.pages(paginatedBy: trigger.signal(activatedBy: "more")).record()
        trigger.activate(for: "more")
        #expect(trigger.subscriberCount(for: "more") == 1, "waiting for the third page")
        recorder.cancel()
        #expect(trigger.subscriberCount(for: "more") == 0)
        trigger.activate(for: "more")
        #expect(recorder.values.count == 2)
        #expect(source.fetches == [0, 1])
    }
}
