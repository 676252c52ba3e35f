import Testing
import HubEngine
import HubTesting

/// The article's `(Int?, Character?, Bool?)`, made `Equatable` for the recordings.
private struct Triple: Equatable, CustomStringConvertible {
    let a: Int?
    let b: Character?
    let c: Bool?
    init(_ a: Int?, _ b: Character?, _ c: Bool?) {
        self.a = a
        self.b = b
        self.c = c
    }
    var description: String { "(\(a.map(String.init) ?? "nil"), \(b.map(String.init) ?? "nil"), \(c.map(String.init) ?? "nil"))" }
}

private struct Pair: Equatable {
    let a: Int?
    let b: String?
    init(_ a: Int?, _ b: String?) {
        self.a = a
        self.b = b
    }
}

@Suite("Seeds: reduceLatest (ReduceLatest2, ReduceLatest3)")
struct ReduceLatestTests {
    /// The test sequence of the article, step by step.
    @Test func theArticlesSequence() {
        let pub1 = PassthroughSubject<Int, Never>()
        let pub2 = PassthroughSubject<Character, Never>()
        let pub3 = PassthroughSubject<Bool, Never>()
        let recorder = pub1.reduceLatest(pub2, pub3) { Triple($0, $1, $2) }.record()
        pub1.send(1)
        pub1.send(2)
        pub2.send("A")
        pub3.send(false)
        pub3.send(completion: .finished)
        pub3.send(true)
        pub2.send("B")
        #expect(recorder.events == [
            .subscription,
            .value(Triple(1, nil, nil)),
            .value(Triple(2, nil, nil)),
            .value(Triple(2, "A", nil)),
            .value(Triple(2, "A", false)),
            .value(Triple(2, "B", false)),
        ])
        pub1.send(completion: .finished)
        #expect(!recorder.isCompleted)
        pub2.send(completion: .finished)
        #expect(recorder.events.last == .finished)
    }

    @Test func sinkSpellingOfTheArticle() {
        let pub1 = PassthroughSubject<Int, Never>()
        let pub2 = PassthroughSubject<Character, Never>()
        let pub3 = PassthroughSubject<Bool, Never>()
        var received: [Triple] = []
        let token = pub1.reduceLatest(pub2, pub3) { ($0, $1, $2) }.sink { received.append(Triple($0.0, $0.1, $0.2)) }
        defer { token.cancel() }
        pub1.send(1)
        pub2.send("A")
        #expect(received == [Triple(1, nil, nil), Triple(1, "A", nil)])
    }

    @Test func twoPublishers() {
        let a = PassthroughSubject<Int, TestError>()
        let b = PassthroughSubject<String, TestError>()
        let recorder = Publishers.ReduceLatest2(a, b) { Pair($0, $1) }.record()
        b.send("x")
        a.send(1)
        b.send("y")
        b.send(completion: .finished)
        a.send(2)
        a.send(completion: .finished)
        #expect(recorder.events == [
            .subscription, .value(Pair(nil, "x")), .value(Pair(1, "x")), .value(Pair(1, "y")), .value(Pair(2, "y")), .finished,
        ])
    }

    @Test func synchronousUpstreams() {
        let recorder = Just(1).reduceLatest(Just("a")) { Pair($0, $1) }.record()
        #expect(recorder.events == [.subscription, .value(Pair(1, nil)), .value(Pair(1, "a")), .finished])
    }

    @Test func everyUpstreamIsReadWithUnlimitedDemandAsTheArticlesSinksDo() {
        let a = DemandProbe<Int, TestError>()
        let b = DemandProbe<Character, TestError>()
        let c = DemandProbe<Bool, TestError>()
        let recorder = a.reduceLatest(b, c) { Triple($0, $1, $2) }.record(initialDemand: .none)
        #expect([a.requests, b.requests, c.requests] == [[.unlimited], [.unlimited], [.unlimited]])
        recorder.request(.max(1))
        recorder.request(.max(3))
        #expect([a.requests, b.requests, c.requests] == [[.unlimited], [.unlimited], [.unlimited]],
                "downstream demand only decides when an output is emitted")
    }

    /// With demand 0, A=1, B=2, C=3, A=4, then request(1) must give [4,2,3]. The
    /// upstreams were asked only for what the downstream asked, so upstreams that buffer for
    /// their subscriber (here `buffer`, on the hub a hot source) handed over their oldest,
    /// stale values one request at a time. Failed before the fix (`[[1, nil, nil]]`).
    @Test func withoutDemandOnlyTheLatestOfEachIsDeliveredAndNothingStale() {
        let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
        let (a, b, c) = (subjects[0], subjects[1], subjects[2])
        let buffered = subjects.map { $0.buffer(size: 10, prefetch: .byRequest, whenFull: .dropOldest) }
        let recorder = buffered[0].reduceLatest(buffered[1], buffered[2]) { [$0, $1, $2] }.record(initialDemand: .none)
        a.send(1); b.send(2); c.send(3); a.send(4)
        #expect(recorder.values.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]])
        recorder.request(.max(1))
        #expect(recorder.values == [[4, 2, 3]], "no new value: nothing again")
        a.send(5)
        #expect(recorder.values == [[4, 2, 3], [5, 2, 3]])
    }

    @Test func valuesWithoutDemandCoalesceIntoOneOutput() {
        let a = DemandProbe<Int, TestError>()
        let b = DemandProbe<String, TestError>()
        let recorder = a.reduceLatest(b) { Pair($0, $1) }.record(initialDemand: .max(1))
        a.send(1)
        a.send(2)
        b.send("x")
        a.send(3)
        #expect(recorder.values == [Pair(1, nil)])
        recorder.request(.max(2))
        #expect(recorder.values == [Pair(1, nil), Pair(3, "x")])
        b.send("y")
        #expect(recorder.values == [Pair(1, nil), Pair(3, "x"), Pair(3, "y")])
        b.send("z")
        #expect(recorder.values.count == 3)
        recorder.request(.max(1))
        #expect(recorder.values == [Pair(1, nil), Pair(3, "x"), Pair(3, "y"), Pair(3, "z")])
    }

    @Test func nothingIsEmittedBeforeAnyUpstreamHasEmitted() {
        let a = PassthroughSubject<Int, TestError>()
        let b = PassthroughSubject<String, TestError>()
        let recorder = a.reduceLatest(b) { Pair($0, $1) }.record(initialDemand: .none)
        recorder.request(.max(1))
        recorder.request(.unlimited)
        #expect(recorder.events == [.subscription], "never the all-nil tuple")
    }

    @Test func finishesOnlyWhenAllHaveFinished() {
        let a = PassthroughSubject<Int, TestError>()
        let b = PassthroughSubject<Character, TestError>()
        let c = PassthroughSubject<Bool, TestError>()
        let recorder = a.reduceLatest(b, c) { Triple($0, $1, $2) }.record()
        a.send(completion: .finished)
        c.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        b.send("z")
        b.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(Triple(nil, "z", nil)), .finished])
    }

    @Test func failureCancelsTheOthers() {
        let a = DemandProbe<Int, TestError>()
        let b = DemandProbe<Character, TestError>()
        let c = DemandProbe<Bool, TestError>()
        let recorder = a.reduceLatest(b, c) { Triple($0, $1, $2) }.record()
        a.send(1)
        c.send(completion: .finished)
        b.send(completion: .failure(.oops))
        #expect(a.cancellations == 1)
        #expect(b.cancellations == 0)
        #expect(c.cancellations == 0)
        a.send(2)
        a.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(Triple(1, nil, nil)), .failure(.oops)])
    }

    @Test func cancelCancelsAllAndDeliversNothingMore() {
        let a = DemandProbe<Int, TestError>()
        let b = DemandProbe<Character, TestError>()
        let c = DemandProbe<Bool, TestError>()
        let recorder = a.reduceLatest(b, c) { Triple($0, $1, $2) }.record()
        b.send(completion: .finished)
        recorder.cancel()
        recorder.cancel()
        #expect([a.cancellations, b.cancellations, c.cancellations] == [1, 0, 1])
        a.send(1)
        c.send(completion: .failure(.oops))
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])
        #expect(a.requests == [.unlimited])
    }

    @Test func reentrantSendFromReceiveIsDeliveredByTheRunningLoop() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<String, Never>()
        let recorder = RecordingSubscriber<Pair, Never>(initialDemand: .unlimited)
        recorder.onValue = { pair in
            if let value = pair.a, value < 3 { a.send(value + 1) }
            if pair.a == 3, pair.b == nil { b.send("done") }
            return .none
        }
        a.reduceLatest(b) { Pair($0, $1) }.subscribe(recorder)
        a.send(1)
        #expect(recorder.values == [Pair(1, nil), Pair(2, nil), Pair(3, nil), Pair(3, "done")])
    }

    @Test func reentrantRequestAndCancelFromReceive() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<String, Never>()
        let recorder = RecordingSubscriber<Pair, Never>(initialDemand: .max(1))
        recorder.onValue = { [unowned recorder] pair in
            if pair.b == nil { b.send("x") }
            recorder.request(.max(1))
            if pair.b == "x" { recorder.cancel() }
            return .none
        }
        a.reduceLatest(b) { Pair($0, $1) }.subscribe(recorder)
        a.send(1)
        a.send(2)
        #expect(recorder.events == [.subscription, .value(Pair(1, nil)), .value(Pair(1, "x"))])
        #expect(a.subscriberCount == 0)
        #expect(b.subscriberCount == 0)
    }

    @Test func upstreamFailingDuringSubscriptionFailsAtOnce() {
        let b = PassthroughSubject<String, TestError>()
        let recorder = Fail<Int, TestError>(error: .oops).reduceLatest(b) { Pair($0, $1) }.record()
        #expect(recorder.events == [.subscription, .failure(.oops)])
        #expect(b.subscriberCount == 0, "the upstreams after the failing one are not subscribed")
    }
}
