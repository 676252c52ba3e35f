import Testing
import HubEngine
import HubTesting

/// Makes a new `DemandProbe` for each run of a pipeline and keeps them for inspection.
private final class ProbeFactory {
    private(set) var probes: [DemandProbe<Int, TestError>] = []
    func make() -> DemandProbe<Int, TestError> {
        let probe = DemandProbe<Int, TestError>()
        probes.append(probe)
        return probe
    }
}

@Suite("Seeds: Publishers.Publish and Publishers.PublishAndRepeat")
struct PublishTests {
    // MARK: PublishAndRepeat

    @Test func publishAndRepeatRunsAtOnceAndAgainOnEachSignalCancellingTheRunningOne() {
        let trigger = Trigger()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) {
            factory.make()
        }.record()
        #expect(factory.probes.count == 1)
        factory.probes[0].send(1)
        trigger.activate(for: "reload")
        #expect(factory.probes.count == 2)
        #expect(factory.probes[0].cancellations == 1)
        factory.probes[0].send(99)
        factory.probes[1].send(2)
        trigger.activate(for: "reload")
        #expect(factory.probes.map(\.cancellations) == [1, 1, 0])
        factory.probes[2].send(3)
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3)])
        #expect(factory.probes.map(\.subscriptions) == [1, 1, 1])
    }

    @Test func theArticlesTypeSpellingWorks() {
        let trigger = Trigger()
        var runs = 0
        let recorder = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal()) { () -> Just<Int> in
            runs += 1
            return Just(runs)
        }.record()
        trigger.activate()
        trigger.activate()
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3)])
    }

    @Test func outstandingDemandIsCarriedOverToTheNewPipeline() {
        let trigger = Trigger()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal()) { factory.make() }
            .record(initialDemand: .max(3))
        #expect(factory.probes[0].requests == [.max(3)])
        factory.probes[0].send(1)
        trigger.activate()
        #expect(factory.probes[1].requests == [.max(2)])
        recorder.request(.max(1))
        #expect(factory.probes[1].requests == [.max(2), .max(1)])
        #expect(factory.probes[0].requests == [.max(3)], "a cancelled pipeline gets no more demand")
        factory.probes[1].send(2)
        factory.probes[1].send(3)
        factory.probes[1].send(4)
        trigger.activate()
        #expect(factory.probes[2].requests.isEmpty, "no outstanding demand, nothing requested")
        #expect(recorder.values == [1, 2, 3, 4])
    }

    @Test func demandReturnedFromReceiveIsCounted() {
        let trigger = Trigger()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal()) { factory.make() }
            .record(initialDemand: .max(1), demandPerValue: .max(2))
        #expect(factory.probes[0].send(1) == .max(2))
        trigger.activate()
        #expect(factory.probes[1].requests == [.max(2)])
        #expect(recorder.values == [1])
    }

    @Test func signalIsAskedForUnlimitedAndCancelledWithTheSubscription() {
        let signal = DemandProbe<Void, Never>()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: signal) { factory.make() }.record()
        #expect(signal.requests == [.unlimited])
        signal.send(())
        recorder.cancel()
        recorder.cancel()
        #expect(signal.cancellations == 1)
        #expect(factory.probes.map(\.cancellations) == [1, 1])
        signal.send(())
        factory.probes[1].send(5)
        #expect(factory.probes.count == 2)
        #expect(recorder.events == [.subscription])
    }

    @Test func finishedPipelineLeavesItIdleUntilTheNextSignal() {
        let trigger = Trigger()
        var runs = 0
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal()) { () -> Publishers.Sequence<[Int], TestError> in
            runs += 1
            return Publishers.Sequence(sequence: [runs * 10, runs * 10 + 1])
        }.record()
        #expect(recorder.events == [.subscription, .value(10), .value(11)])
        trigger.activate()
        #expect(recorder.events == [.subscription, .value(10), .value(11), .value(20), .value(21)])
    }

    @Test func finishesWhenTheSignalHasFinishedAndThePipelineToo() {
        let signal = PassthroughSubject<Void, Never>()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: signal) { factory.make() }.record()
        signal.send(completion: .finished)
        #expect(recorder.events == [.subscription], "the running pipeline keeps it alive")
        factory.probes[0].send(1)
        factory.probes[0].send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .finished])
    }

    @Test func finishesAtOnceWhenTheSignalFinishesWhileIdle() {
        let signal = PassthroughSubject<Void, Never>()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: signal) { Empty<Int, TestError>() }.record()
        #expect(recorder.events == [.subscription])
        signal.send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func pipelineFailureCancelsTheSignalAndFails() {
        let signal = DemandProbe<Void, Never>()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: signal) { factory.make() }.record()
        factory.probes[0].send(completion: .failure(.oops))
        #expect(signal.cancellations == 1)
        #expect(recorder.events == [.subscription, .failure(.oops)])
        signal.send(())
        #expect(factory.probes.count == 1)
    }

    @Test func replacedPipelineFailureIsIgnored() {
        let trigger = Trigger()
        let factory = ProbeFactory()
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal()) { factory.make() }.record()
        trigger.activate()
        factory.probes[0].send(completion: .failure(.oops))
        factory.probes[1].send(7)
        #expect(recorder.events == [.subscription, .value(7)])
    }

    @Test func activationFromInsideReceiveSwitchesAtOnce() {
        let trigger = Trigger()
        var runs = 0
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        recorder.onValue = { value in
            if value == 0 || value == 10 { trigger.activate() }
            return .none
        }
        Publishers.publishAndRepeat(onOutputFrom: trigger.signal()) { () -> Publishers.Sequence<Range<Int>, Never> in
            defer { runs += 1 }
            return (runs * 10 ..< runs * 10 + 3).publisher
        }.subscribe(recorder)
        // As in the article's `prepend(())` chain, the first run happens before the signal is
        // subscribed: the activation from inside its first value is missed.
        #expect(recorder.values == [0, 1, 2])
        trigger.activate()
        // The activation from inside the value 10 cancels the second run at once.
        #expect(recorder.events == [.subscription, .value(0), .value(1), .value(2), .value(10), .value(20), .value(21), .value(22)])
        #expect(runs == 3)
    }

    @Test func cancelFromInsideReceiveStopsEverything() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] _ in
            recorder.cancel()
            return .none
        }
        Publishers.publishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) { (1...3).publisher }.subscribe(recorder)
        #expect(trigger.subscriberCount(for: "reload") == 0, "cancelled before the signal was subscribed")
        trigger.activate(for: "reload")
        #expect(recorder.events == [.subscription, .value(1)])
    }

    /// The article's homepage: rows of topics, each paginated by its own trigger key, the whole
    /// pipeline reloaded by another.
    @Test func homepageRowsReloadAndLoadMore() {
        enum TriggerId: Hashable {
            case reload
            case loadMore(topicId: Int)
        }
        struct Row: Equatable {
            let topic: Int
            let medias: [Int]
        }
        let trigger = Trigger()
        var sources: [Int: SeedPagedSource] = [:]
        var reloads = 0
        let recorder = Publishers.publishAndRepeat(onOutputFrom: trigger.signal(activatedBy: TriggerId.reload)) {
            reloads += 1
            return Publishers.accumulateLatestMany([1, 2].map { topic in
                let source = SeedPagedSource(pageCount: 3, pageSize: 1)
                sources[topic] = source
                return source.pages(paginatedBy: trigger.signal(activatedBy: TriggerId.loadMore(topicId: topic)))
                    .map(\.items)
                    .scan([], +)
                    .map { Row(topic: topic, medias: $0) }
            })
        }.record()
        #expect(recorder.values == [[Row(topic: 1, medias: [0]), Row(topic: 2, medias: [0])]])
        trigger.activate(for: TriggerId.loadMore(topicId: 2))
        #expect(recorder.values.last == [Row(topic: 1, medias: [0]), Row(topic: 2, medias: [0, 1])])
        trigger.activate(for: TriggerId.loadMore(topicId: 1))
        #expect(recorder.values.last == [Row(topic: 1, medias: [0, 1]), Row(topic: 2, medias: [0, 1])])
        trigger.activate(for: TriggerId.reload)
        #expect(reloads == 2)
        #expect(recorder.values.last == [Row(topic: 1, medias: [0]), Row(topic: 2, medias: [0])])
        #expect(trigger.subscriberCount(for: TriggerId.loadMore(topicId: 1)) == 1, "the old pagination was cancelled")
        trigger.activate(for: TriggerId.loadMore(topicId: 1))
        trigger.activate(for: TriggerId.loadMore(topicId: 1))
        #expect(recorder.values.last == [Row(topic: 1, medias: [0, 1, 2]), Row(topic: 2, medias: [0])])
        #expect(recorder.values.count == 6)
        #expect(!recorder.isCompleted)
    }

    // MARK: Publish

    @Test func publishRunsNothingBeforeTheFirstSignal() {
        let trigger = Trigger()
        let factory = ProbeFactory()
        let recorder = Publishers.publish(onOutputFrom: trigger.signal()) { factory.make() }.record(initialDemand: .max(2))
        #expect(factory.probes.isEmpty)
        trigger.activate()
        #expect(factory.probes.count == 1)
        #expect(factory.probes[0].requests == [.max(2)])
        factory.probes[0].send(1)
        trigger.activate()
        #expect(factory.probes[0].cancellations == 1)
        #expect(factory.probes[1].requests == [.max(1)])
        factory.probes[0].send(8)
        factory.probes[1].send(2)
        #expect(recorder.events == [.subscription, .value(1), .value(2)])
    }

    @Test func publishFinishesAtOnceWhenTheSignalFinishesBeforeAnyRun() {
        let signal = PassthroughSubject<Void, Never>()
        var runs = 0
        let recorder = Publishers.Publish(onOutputFrom: signal) { () -> Just<Int> in
            runs += 1
            return Just(runs)
        }.record()
        signal.send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
        #expect(runs == 0)
    }

    @Test func publishFailurePathAndCancellation() {
        let signal = DemandProbe<Void, Never>()
        let factory = ProbeFactory()
        let recorder = Publishers.publish(onOutputFrom: signal) { factory.make() }.record()
        #expect(signal.requests == [.unlimited])
        signal.send(())
        signal.send(())
        factory.probes[1].send(completion: .failure(.other(2)))
        #expect(recorder.events == [.subscription, .failure(.other(2))])
        #expect(signal.cancellations == 1)
        recorder.cancel()
        #expect(signal.cancellations == 1, "nothing to cancel after the failure")
        #expect(factory.probes.map(\.cancellations) == [1, 0])
    }

    @Test func publishWithASynchronousSignal() {
        let recorder = Publishers.publish(onOutputFrom: [(), ()].publisher) { Just(1) }.record()
        #expect(recorder.events == [.subscription, .value(1), .value(1), .finished])
    }
}
