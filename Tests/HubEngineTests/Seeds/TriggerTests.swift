import Testing
@testable import HubEngine
import HubTesting

/// The article's trigger identifiers.
private enum TriggerId: Hashable {
    case reload
    case loadMore(topicId: String)
}

@Suite("Seeds: Trigger and signals")
struct TriggerTests {
    private func ticks(_ signal: Trigger.Signal, initialDemand: Subscribers.Demand = .unlimited) -> RecordingSubscriber<String, Never> {
        signal.map { _ in "tick" }.record(initialDemand: initialDemand)
    }

    @Test func signalEmitsOnlyForActivationsOfItsKey() {
        let trigger = Trigger()
        let one = ticks(trigger.signal(activatedBy: 1))
        let two = ticks(trigger.signal(activatedBy: 2))
        trigger.activate(for: 1)
        trigger.activate(for: 1)
        trigger.activate(for: 3)
        trigger.activate(for: "2")
        #expect(one.events == [.subscription, .value("tick"), .value("tick")])
        #expect(two.events == [.subscription])
        trigger.activate(for: 2)
        #expect(two.events == [.subscription, .value("tick")])
        #expect(one.values.count == 2)
    }

    @Test func anyHashableKeysSuchAsTheArticlesEnum() {
        let trigger = Trigger()
        let reload = ticks(trigger.signal(activatedBy: TriggerId.reload))
        let comedy = ticks(trigger.signal(activatedBy: TriggerId.loadMore(topicId: "comedy")))
        let drama = ticks(trigger.signal(activatedBy: TriggerId.loadMore(topicId: "drama")))
        trigger.activate(for: TriggerId.loadMore(topicId: "comedy"))
        trigger.activate(for: TriggerId.reload)
        trigger.activate(for: AnyHashable(TriggerId.loadMore(topicId: "comedy")))
        #expect(reload.values.count == 1)
        #expect(comedy.values.count == 2)
        #expect(drama.values.isEmpty)
    }

    @Test func unkeyedSignalIsSeparateFromKeyedOnes() {
        let trigger = Trigger()
        let unkeyed = ticks(trigger.signal())
        let keyed = ticks(trigger.signal(activatedBy: 0))
        trigger.activate()
        #expect(unkeyed.values == ["tick"])
        #expect(keyed.values.isEmpty)
        trigger.activate(for: 0)
        #expect(unkeyed.values == ["tick"])
        #expect(keyed.values == ["tick"])
    }

    @Test func everySubscriberOfTheKeyIsReached() {
        let trigger = Trigger()
        let signal = trigger.signal(activatedBy: "k")
        let first = ticks(signal)
        let second = ticks(trigger.signal(activatedBy: "k"))
        #expect(trigger.subscriberCount(for: "k") == 2)
        trigger.activate(for: "k")
        #expect(first.values == ["tick"])
        #expect(second.values == ["tick"])
    }

    @Test func subscriberWithoutDemandMissesTheActivation() {
        let trigger = Trigger()
        let recorder = ticks(trigger.signal(activatedBy: 1), initialDemand: .max(1))
        trigger.activate(for: 1)
        trigger.activate(for: 1)
        #expect(recorder.values.count == 1)
        recorder.request(.max(1))
        #expect(recorder.values.count == 1, "a missed activation is not replayed")
        trigger.activate(for: 1)
        #expect(recorder.values.count == 2)
        let none = ticks(trigger.signal(activatedBy: 1), initialDemand: .none)
        trigger.activate(for: 1)
        #expect(none.events == [.subscription])
    }

    @Test func lateSubscriberDoesNotSeeEarlierActivations() {
        let trigger = Trigger()
        trigger.activate(for: 1)
        let recorder = ticks(trigger.signal(activatedBy: 1))
        #expect(recorder.events == [.subscription])
    }

    @Test func cancelledSubscriberReceivesNothingAndIsRemoved() {
        let trigger = Trigger()
        let recorder = ticks(trigger.signal(activatedBy: 1))
        let other = ticks(trigger.signal(activatedBy: 1))
        trigger.activate(for: 1)
        recorder.cancel()
        recorder.cancel()
        #expect(trigger.subscriberCount(for: 1) == 1)
        trigger.activate(for: 1)
        #expect(recorder.values.count == 1)
        #expect(other.values.count == 2)
        other.cancel()
        #expect(trigger.subscriberCount(for: 1) == 0)
        trigger.activate(for: 1)
        #expect(other.values.count == 2)
    }

    @Test func signalNeverCompletes() {
        let trigger = Trigger()
        let recorder = ticks(trigger.signal(activatedBy: 1))
        for _ in 0..<3 { trigger.activate(for: 1) }
        #expect(!recorder.isCompleted)
    }

    @Test func activationFromInsideReceiveIsDelivered() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<String, Never>(initialDemand: .unlimited)
        var count = 0
        recorder.onValue = { _ in
            count += 1
            if count < 3 { trigger.activate(for: 1) }
            return .none
        }
        trigger.signal(activatedBy: 1).map { _ in "tick" }.subscribe(recorder)
        trigger.activate(for: 1)
        #expect(recorder.values.count == 3)
    }

    @Test func cancelFromInsideReceiveStopsDelivery() {
        let trigger = Trigger()
        let recorder = RecordingSubscriber<String, Never>(initialDemand: .unlimited)
        recorder.onValue = { [unowned recorder] _ in
            recorder.cancel()
            return .max(1)
        }
        trigger.signal(activatedBy: 1).map { _ in "tick" }.subscribe(recorder)
        trigger.activate(for: 1)
        trigger.activate(for: 1)
        #expect(recorder.values.count == 1)
        #expect(trigger.subscriberCount(for: 1) == 0)
    }

    @Test func manyShortLivedKeysAreForgotten() {
        let trigger = Trigger()
        for key in 0..<100 {
            let recorder = ticks(trigger.signal(activatedBy: key))
            recorder.cancel()
        }
        let live = ticks(trigger.signal(activatedBy: 1000))
        for key in 0..<100 { #expect(trigger.subscriberCount(for: key) == 0) }
        #expect(trigger.keyCount <= 17, "keys without subscribers are pruned as the table grows")
        trigger.activate(for: 1000)
        #expect(live.values.count == 1)
        live.cancel()
        trigger.activate(for: 1000)
        #expect(trigger.keyCount < 17)
    }

    @Test func activationsSeeEveryKeyInOrderAndNilForTheUnkeyedOne() {
        let trigger = Trigger()
        let all = trigger.activations.record(initialDemand: .unlimited)
        let one = ticks(trigger.signal(activatedBy: "a"))
        #expect(trigger.subscriberCount == 2)
        trigger.activate(for: "a")
        trigger.activate(for: 7)
        trigger.activate()
        #expect(all.values == [AnyHashable("a"), AnyHashable(7), nil])
        #expect(one.values.count == 1, "a keyed signal only sees its key")
        all.cancel()
        #expect(trigger.subscriberCount == 1)
    }

    @Test func activationsKeepDemandLikeASubject() {
        let trigger = Trigger()
        let all = trigger.activations.record(initialDemand: .max(1))
        trigger.activate(for: 1)
        trigger.activate(for: 2)
        #expect(all.values == [AnyHashable(1)], "without demand, the second activation is missed")
        all.request(.max(1))
        trigger.activate(for: 3)
        #expect(all.values == [AnyHashable(1), AnyHashable(3)])
    }
}
