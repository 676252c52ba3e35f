import Testing
import HubEngine
import HubTesting

@Suite("Higher-order operators: share, multicast, autoconnect, makeConnectable")
struct ConnectableTests {
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: share

    @Test func shareSubscribesOnceRequestingUnlimitedWhateverTheDownstreamDemand() {
        let upstream = Probe()
        let shared = upstream.share()
        let first = shared.record(initialDemand: .max(1))
        let second = shared.record(initialDemand: .max(2))
        #expect(upstream.subscriptions == 1)
        #expect(upstream.requests == [.unlimited])
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        #expect(first.events == [.subscription, .value(1)])
        #expect(second.events == [.subscription, .value(1), .value(2)])
        upstream.send(completion: .failure(.oops))
        #expect(first.events == [.subscription, .value(1), .failure(.oops)])
        #expect(second.events == [.subscription, .value(1), .value(2), .failure(.oops)])
    }

    @Test func shareDisconnectsWhenTheLastSubscriberCancelsAndReconnectsForTheNext() {
        let upstream = Probe()
        let shared = upstream.share()
        let first = shared.record()
        let second = shared.record()
        first.cancel()
        first.cancel() // idempotent: must not count down twice
        #expect(upstream.cancellations == 0)
        upstream.send(1)
        #expect(second.values == [1])
        #expect(first.values == [])
        second.cancel()
        #expect(upstream.cancellations == 1)
        let third = shared.record()
        #expect(upstream.subscriptions == 2)
        upstream.send(2)
        #expect(third.values == [2])
    }

    @Test func shareIsAClassComparedByIdentity() {
        let subject = HubEngine.PassthroughSubject<Int, Never>()
        let shared = subject.share()
        let alias = shared
        #expect(shared == alias)
        #expect(shared != subject.share())
        #expect(shared.upstream === subject)
    }

    @Test func shareOfAColdPublisherDeliversToTheFirstSubscriberOnly() {
        let shared = [1, 2, 3].publisher.share()
        let first = shared.record()
        let late = shared.record()
        #expect(first.events == [.subscription, .value(1), .value(2), .value(3), .finished])
        #expect(late.events == [.subscription, .finished])
    }

    // MARK: multicast

    @Test func multicastDoesNothingUntilConnectAndDisconnectsOnCancel() {
        let upstream = Probe()
        var created = 0
        let multicast = upstream.multicast { () -> HubEngine.PassthroughSubject<Int, TestError> in
            created += 1
            return HubEngine.PassthroughSubject()
        }
        let recorder = multicast.record(initialDemand: .max(1))
        let other = multicast.record(initialDemand: .max(5))
        #expect(upstream.subscriptions == 0)
        #expect(created == 1)
        let connection = multicast.connect()
        #expect(upstream.subscriptions == 1)
        #expect(upstream.requests == [.unlimited])
        upstream.send(1)
        upstream.send(2)
        #expect(recorder.values == [1])
        #expect(other.values == [1, 2])
        connection.cancel()
        #expect(upstream.cancellations == 1)
        #expect(created == 1)
    }

    @Test func multicastSubjectReceivesTheUpstreamThroughTheGivenSubject() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let subject = HubEngine.CurrentValueSubject<Int, TestError>(0)
        let multicast = upstream.multicast(subject: subject)
        let recorder = multicast.record()
        #expect(recorder.values == [0])
        let connection = multicast.connect()
        upstream.send(7)
        #expect(subject.value == 7)
        #expect(recorder.values == [0, 7])
        upstream.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(0), .value(7), .finished])
        connection.cancel()
    }

    @Test func multicastSubscriberCancelStopsOnlyThatSubscriber() {
        let upstream = HubEngine.PassthroughSubject<Int, TestError>()
        let multicast = upstream.multicast { HubEngine.PassthroughSubject<Int, TestError>() }
        let leaving = multicast.record()
        let staying = multicast.record(initialDemand: .none, demandPerValue: .max(1))
        staying.request(.max(1))
        let connection = multicast.connect()
        upstream.send(1)
        leaving.cancel()
        upstream.send(2)
        #expect(leaving.values == [1])
        #expect(staying.values == [1, 2])
        connection.cancel()
        upstream.send(3)
        #expect(staying.values == [1, 2])
    }

    // MARK: autoconnect and makeConnectable

    @Test func autoconnectConnectsOnFirstSubscriptionAndCountsSubscribers() {
        let upstream = Probe()
        let auto = upstream.multicast { HubEngine.PassthroughSubject<Int, TestError>() }.autoconnect()
        #expect(upstream.subscriptions == 0)
        let first = auto.record()
        #expect(upstream.subscriptions == 1)
        let second = auto.record()
        #expect(upstream.subscriptions == 1)
        second.cancel()
        second.cancel()
        #expect(upstream.cancellations == 0)
        first.cancel()
        #expect(upstream.cancellations == 1)
    }

    @Test func autoconnectPassesDemandAndCompletionThrough() {
        let subject = HubEngine.PassthroughSubject<Int, Never>()
        let auto = subject.makeConnectable().autoconnect()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        auto.subscribe(recorder)
        subject.send(1)
        subject.send(2)
        recorder.request(.max(1))
        subject.send(3)
        subject.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(3), .finished])
    }

    @Test func makeConnectableHoldsValuesBackUntilConnect() {
        let connectable = [1, 2, 3].publisher.makeConnectable()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        connectable.subscribe(recorder)
        #expect(recorder.events == [.subscription])
        let connection = connectable.connect()
        #expect(recorder.events == [.subscription, .value(1), .value(2), .value(3), .finished])
        connection.cancel()
    }

    @Test func connectablePublisherIsUsableGenerically() {
        func connectAll<C: HubEngine.ConnectablePublisher>(_ publishers: [C]) -> [any HubEngine.Cancellable] {
            publishers.map { $0.connect() }
        }
        let subject = HubEngine.PassthroughSubject<Int, Never>()
        let connectables = [subject.makeConnectable(), subject.makeConnectable()]
        let recorders = connectables.map { $0.record() }
        let connections = connectAll(connectables)
        subject.send(4)
        #expect(recorders.map(\.values) == [[4], [4]])
        connections.forEach { $0.cancel() }
        subject.send(5)
        #expect(recorders.map(\.values) == [[4], [4]])
    }
}
