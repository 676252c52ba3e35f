import Testing
@testable import HubEngine
import HubTesting

@Suite("Demand arithmetic and the basic contract")
struct CoreContractTests {
    @Test func demandArithmeticMatchesCombine() {
        typealias D = Subscribers.Demand
        #expect(D.unlimited + .max(1) == .unlimited)
        #expect(D.max(1) + .unlimited == .unlimited)
        #expect(D.max(2) + .max(3) == .max(5))
        #expect(D.max(Int.max) + .max(1) == .unlimited)
        #expect(D.max(3) - .max(5) == .none)
        #expect(D.max(5) - .max(3) == .max(2))
        #expect(D.unlimited - .max(5) == .unlimited)
        #expect(D.max(5) - .unlimited == .none)
        #expect(D.max(2) * 3 == .max(6))
        #expect(D.unlimited * 3 == .unlimited)
        #expect(D.max(1) < .unlimited)
        #expect(!(D.unlimited < .max(Int.max)))
        #expect(D.max(3) > 2)
        #expect(D.unlimited > Int.max)
        #expect(D.none == 0)
        #expect(D.unlimited != 0)
        #expect(D.unlimited.max == nil)
        #expect(D.max(4).max == 4)
        #expect(D.unlimited.description == "unlimited")
        #expect(D.max(7).description == "max(7)")
        var d = D.max(1)
        d += .unlimited
        #expect(d == .unlimited)
        d -= 5
        #expect(d == .unlimited)
    }

    @Test func negativeDemandIsAPreconditionFailure() async {
        await #expect(processExitsWith: .failure) {
            _ = Subscribers.Demand.max(-1)
        }
    }

    @Test func sequenceIsColdAndHonoursDemand() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
        [1, 2, 3].publisher.subscribe(recorder)
        #expect(recorder.events == [.subscription, .value(1), .value(2)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .finished])
    }

    @Test func reentrantRequestFromReceiveIsAdded() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        recorder.onValue = { [unowned recorder] _ in
            recorder.request(.max(1))
            return .none
        }
        (1...4).publisher.subscribe(recorder)
        #expect(recorder.values == [1, 2, 3, 4])
        #expect(recorder.isCompleted)
    }

    @Test func passthroughSubjectDeliversOnlyWithDemand() {
        let subject = PassthroughSubject<Int, TestError>()
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        subject.subscribe(recorder)
        subject.send(1)
        subject.send(2)
        recorder.request(.max(1))
        subject.send(3)
        subject.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(1), .value(3), .failure(.oops)])
        let late = RecordingSubscriber<Int, TestError>()
        subject.subscribe(late)
        #expect(late.events == [.subscription, .failure(.oops)])
    }

    @Test func subjectSendFromInsideReceiveIsDelivered() {
        let subject = PassthroughSubject<Int, Never>()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        recorder.onValue = { value in
            if value < 3 { subject.send(value + 1) }
            return .none
        }
        subject.subscribe(recorder)
        subject.send(1)
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func currentValueSubjectDeliversCurrentOnFirstDemandAndKeepsLatest() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let recorder = RecordingSubscriber<Int, Never>()
        subject.subscribe(recorder)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.values == [0])
        subject.send(1)
        subject.send(2)
        recorder.request(.max(1))
        #expect(recorder.values == [0, 2])
        #expect(subject.value == 2)
    }

    @Test func cancelIsIdempotentAndStopsDelivery() {
        let subject = PassthroughSubject<Int, Never>()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        subject.subscribe(recorder)
        subject.send(1)
        recorder.cancel()
        recorder.cancel()
        subject.send(2)
        subject.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1)])
        #expect(subject.subscriberCount == 0)
    }

    @Test func anyCancellableCancelsOnDeinit() {
        let subject = PassthroughSubject<Int, Never>()
        var received: [Int] = []
        do {
            let cancellable = subject.sink { received.append($0) }
            subject.send(1)
            _ = cancellable
        }
        subject.send(2)
        #expect(received == [1])
        #expect(subject.subscriberCount == 0)
    }
}

@Suite("Subjects under reentrancy")
struct SubjectReentrancyTests {
    @Test func cancellingAnotherSubscriberDuringDeliveryStopsItAtOnce() {
        let subject = PassthroughSubject<Int, Never>()
        let second = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        let first = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        first.onValue = { _ in
            second.cancel()
            return .none
        }
        subject.subscribe(first)
        subject.subscribe(second)
        subject.send(1)
        subject.send(2)
        #expect(first.values == [1, 2])
        #expect(second.values == [])
        #expect(subject.subscriberCount == 1)
    }

    @Test func subscribingDuringDeliveryMissesTheValueBeingDelivered() {
        let subject = PassthroughSubject<Int, Never>()
        let late = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        let first = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        first.onValue = { value in
            if value == 1 { subject.subscribe(late) }
            return .none
        }
        subject.subscribe(first)
        subject.send(1)
        subject.send(2)
        #expect(first.values == [1, 2])
        #expect(late.values == [2])
        #expect(subject.subscriberCount == 2)
    }

    @Test func completingDuringDeliveryFinishesEveryoneOnceAndDeliversNothingMore() {
        let subject = CurrentValueSubject<Int, TestError>(0)
        let first = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        let second = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
        first.onValue = { value in
            if value == 1 { subject.send(completion: .failure(.oops)) }
            return .none
        }
        subject.subscribe(first)
        subject.subscribe(second)
        subject.send(1)
        subject.send(2)
        #expect(first.events == [.subscription, .value(0), .value(1), .failure(.oops)])
        #expect(second.events == [.subscription, .value(0), .failure(.oops)])
        #expect(subject.subscriberCount == 0)
    }

    @Test func aSubjectStaysAliveWhileSubscribed() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        weak var weakSubject: CurrentValueSubject<Int, Never>?
        do {
            let subject = CurrentValueSubject<Int, Never>(7)
            weakSubject = subject
            subject.subscribe(recorder)
        }
        #expect(weakSubject != nil)
        recorder.request(.max(1))
        #expect(recorder.values == [7])
        recorder.cancel()
        #expect(weakSubject == nil)
    }
}
