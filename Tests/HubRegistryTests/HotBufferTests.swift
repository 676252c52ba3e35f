import Testing
import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubTesting

@Suite("Hot buffer: a hot source's per-subscription buffer")
struct HotBufferTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    private func attach(_ capacity: Int, _ policy: OverflowPolicy, demand: Subscribers.Demand = .none)
        -> (PassthroughSubject<Value, HubError>, Recorder, HubMetrics)
    {
        let subject = PassthroughSubject<Value, HubError>()
        let metrics = HubMetrics()
        let recorder = Recorder(initialDemand: demand)
        subject.hotBuffer(capacity: capacity, policy: policy, metrics: metrics).subscribe(recorder)
        return (subject, recorder, metrics)
    }

    @Test func requestsUnlimitedFromTheSourceAndDeliversWithinDemand() {
        let probe = DemandProbe<Value, HubError>()
        let recorder = Recorder(initialDemand: .max(1))
        probe.hotBuffer(capacity: 4, policy: .error).subscribe(recorder)
        #expect(probe.requests == [.unlimited])
        #expect(probe.send(1) == .none)
        #expect(probe.send(2) == .none)
        #expect(recorder.values == [1])
        recorder.request(.max(5))
        #expect(recorder.values == [1, 2])
        probe.send(3)
        #expect(recorder.values == [1, 2, 3])
    }

    @Test func keepsValuesSentWithoutDemandInOrder() {
        let (subject, recorder, metrics) = attach(3, .error)
        subject.send(1)
        subject.send(2)
        #expect(recorder.values == [])
        recorder.request(.max(1))
        #expect(recorder.values == [1])
        recorder.request(.max(2))
        #expect(recorder.values == [1, 2])
        #expect(metrics.dropped == 0)
    }

    @Test(arguments: [
        (OverflowPolicy.dropOldest, [Value(2), 3], 1),
        (.dropNewest, [1, 2], 1),
        (.latest, [3], 2),
    ])
    func dropPoliciesKeepTheRightValuesAndCountDrops(policy: OverflowPolicy, kept: [Value], drops: Int) {
        let (subject, recorder, metrics) = attach(2, policy)
        subject.send(1)
        subject.send(2)
        subject.send(3)
        recorder.request(.max(5))
        #expect(recorder.values == kept)
        #expect(metrics.dropped == drops)
        #expect(!recorder.isCompleted)
    }

    @Test func errorPolicyEndsTheSubscriptionWithOverflowAndCancelsTheSource() {
        let probe = DemandProbe<Value, HubError>()
        let metrics = HubMetrics()
        let recorder = Recorder()
        probe.hotBuffer(capacity: 2, policy: .error, metrics: metrics).subscribe(recorder)
        probe.send(1)
        probe.send(2)
        probe.send(3)
        #expect(probe.cancellations == 1)
        #expect(metrics.overflows == 1)
        guard case .failure(let error)? = recorder.events.last else {
            Issue.record("expected a failure, got \(recorder.events)")
            return
        }
        #expect(error.code == .overflow)
        probe.send(4)
        recorder.request(.max(9))
        #expect(recorder.values == [])
    }

    @Test func completionFollowsTheBufferedValuesWithoutDemand() {
        let (subject, recorder, _) = attach(5, .error)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(2), .finished])
    }

    @Test func completionOfAnEmptyBufferIsImmediate() {
        let (subject, recorder, _) = attach(5, .error)
        subject.send(completion: .failure(HubError(.failed, "boom", data: "x")))
        #expect(recorder.events == [.subscription, .failure(HubError(.failed, "boom", data: "x"))])
    }

    @Test func cancelStopsDeliveryAndCancelsTheSource() {
        let probe = DemandProbe<Value, HubError>()
        let recorder = Recorder(initialDemand: .unlimited)
        probe.hotBuffer(capacity: 2, policy: .error).subscribe(recorder)
        probe.send(1)
        recorder.cancel()
        recorder.cancel()
        probe.send(2)
        probe.send(completion: .finished)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func reentrantSendsAndRequestsKeepOrder() {
        let subject = PassthroughSubject<Value, HubError>()
        let recorder = Recorder(initialDemand: .max(1))
        recorder.onValue = { value in
            if value == 1 { subject.send(2); subject.send(3) }
            return .max(1)
        }
        subject.hotBuffer(capacity: 8, policy: .error).subscribe(recorder)
        subject.send(1)
        #expect(recorder.values == [1, 2, 3])
    }
}

/// `overflow: block` (PROTOCOL.md §5.7): a full buffer keeps values, congests its
/// subject until it has drained to half, and fails only past its hard bound or when a
/// publisher gave up waiting.
@Suite("Hot buffer: overflow block")
struct HotBufferBlockTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    private func attach(_ capacity: Int, congestion: SubjectCongestion, metrics: HubMetrics = HubMetrics())
        -> (PassthroughSubject<Value, HubError>, Recorder)
    {
        let subject = PassthroughSubject<Value, HubError>()
        let recorder = Recorder(initialDemand: .none)
        subject.hotBuffer(capacity: capacity, policy: .block, metrics: metrics, memory: nil, congestion: congestion)
            .subscribe(recorder)
        return (subject, recorder)
    }

    @Test func aFullBufferKeepsEveryValueAndCongestsUntilItHasDrainedToHalf() {
        let congestion = SubjectCongestion()
        let metrics = HubMetrics()
        let (subject, recorder) = attach(4, congestion: congestion, metrics: metrics)
        var relieved = 0
        for value in 1...3 { subject.send(.int(Int64(value))) }
        #expect(!congestion.isCongested)
        subject.send(4)
        #expect(congestion.isCongested)
        congestion.whenRelieved { relieved += 1 }
        // Values the broker could not hold back still come, and none is dropped.
        for value in 5...10 { subject.send(.int(Int64(value))) }
        recorder.request(.max(7))  // 3 left: above half of 4
        #expect(congestion.isCongested)
        #expect(relieved == 0)
        recorder.request(.max(1))  // 2 left: half
        #expect(!congestion.isCongested)
        #expect(relieved == 1)
        recorder.request(.max(5))
        #expect(recorder.values == (1...10).map { Value.int(Int64($0)) })
        #expect(metrics.dropped == 0 && metrics.overflows == 0)
    }

    @Test func pastFourTimesItsCapacityItFailsWithOverflowAndRelieves() {
        let congestion = SubjectCongestion()
        let (subject, recorder) = attach(2, congestion: congestion)
        for value in 1...8 { subject.send(.int(Int64(value))) }
        #expect(!recorder.isCompleted)
        subject.send(9)
        guard case .failure(let error)? = recorder.events.last else {
            Issue.record("expected overflow, got \(recorder.events)")
            return
        }
        #expect(error.code == .overflow)
        #expect(error.message.contains("4 times over"), "\(error.message)")
        #expect(!congestion.isCongested)
    }

    @Test func aPublisherThatWaitedTooLongEndsTheFullSubscriptionsOnly() {
        let congestion = SubjectCongestion()
        let (subject, slow) = attach(2, congestion: congestion)
        let fast = Recorder(initialDemand: .unlimited)
        subject.hotBuffer(capacity: 2, policy: .block, memory: nil, congestion: congestion).subscribe(fast)
        subject.send(1)
        subject.send(2)
        #expect(congestion.isCongested)
        var relieved = false
        congestion.whenRelieved { relieved = true }
        congestion.failCongesting()
        guard case .failure(let error)? = slow.events.last else {
            Issue.record("expected overflow, got \(slow.events)")
            return
        }
        #expect(error.code == .overflow)
        #expect(relieved)
        #expect(fast.values == [1, 2])
        #expect(!fast.isCompleted)
        subject.send(3)
        #expect(fast.values == [1, 2, 3])
    }

    @Test func aCancelledSubscriptionRelievesItsSubject() {
        let congestion = SubjectCongestion()
        let (subject, recorder) = attach(1, congestion: congestion)
        subject.send(1)
        #expect(congestion.isCongested)
        recorder.cancel()
        #expect(!congestion.isCongested)
    }

    @Test func otherPoliciesNeverCongest() {
        let congestion = SubjectCongestion()
        let subject = PassthroughSubject<Value, HubError>()
        let recorder = Recorder(initialDemand: .none)
        subject.hotBuffer(capacity: 1, policy: .dropOldest, memory: nil, congestion: congestion).subscribe(recorder)
        subject.send(1)
        subject.send(2)
        #expect(!congestion.isCongested)
    }
}
