import Testing
import HubEngine
import HubTesting

/// Random marble scripts in virtual time, checked against small reference models of the
/// documented behaviour (delay shifts every event; debounce keeps a value only if the next
/// event comes strictly more than `dueTime` later).
@Suite("Timing: random timelines against reference models")
struct TimingModelTests {
    /// Strictly increasing event times (ms) and values, then the completion time.
    private func randomMarbles(seed: Int) -> (values: [(ms: Int64, value: Int)], end: Int64, fails: Bool) {
        var generator = SeededGenerator(seed: UInt64(seed))
        var time: Int64 = 0
        var values: [(ms: Int64, value: Int)] = []
        for _ in 0..<Int.random(in: 0...12, using: &generator) {
            time += Int64.random(in: 1...250, using: &generator)
            values.append((time, Int.random(in: 0...99, using: &generator)))
        }
        let end = time + Int64.random(in: 1...250, using: &generator)
        return (values, end, Bool.random(using: &generator))
    }

    @Test(arguments: 0..<60)
    func delayShiftsEveryEvent(seed: Int) {
        let marbles = randomMarbles(seed: seed)
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.delay(for: .milliseconds(100), scheduler: scheduler).subscribe(out)
        for (ms, value) in marbles.values { scheduler.at(ms) { source.send(value) } }
        scheduler.at(marbles.end) { source.send(completion: marbles.fails ? .failure(.oops) : .finished) }
        scheduler.run()
        var expected: [Stamped<Int>] = [.at(0, .subscription)]
        expected += marbles.values.map { .at($0.ms + 100, .value($0.value)) }
        expected.append(.at(marbles.end + 100, marbles.fails ? .failure(.oops) : .finished))
        #expect(out.timeline == expected, "seed \(seed)")
        #expect(scheduler.isIdle)
    }

    @Test(arguments: 0..<60)
    func debounceKeepsValuesFollowedBySilence(seed: Int) {
        let marbles = randomMarbles(seed: seed)
        let dueTime: Int64 = 120
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        source.debounce(for: .milliseconds(dueTime), scheduler: scheduler).subscribe(out)
        for (ms, value) in marbles.values { scheduler.at(ms) { source.send(value) } }
        scheduler.at(marbles.end) { source.send(completion: marbles.fails ? .failure(.oops) : .finished) }
        scheduler.run()
        var expected: [Stamped<Int>] = [.at(0, .subscription)]
        for (index, (ms, value)) in marbles.values.enumerated() {
            let next = index + 1 < marbles.values.count ? marbles.values[index + 1].ms : marbles.end
            // The next event was queued before the timer, so at an equal time it wins.
            if ms + dueTime < next { expected.append(.at(ms + dueTime, .value(value))) }
        }
        expected.append(.at(marbles.end, marbles.fails ? .failure(.oops) : .finished))
        #expect(out.timeline == expected, "seed \(seed)")
        #expect(scheduler.isIdle)
    }

    @Test(arguments: 0..<60)
    func collectByTimeGroupsByInterval(seed: Int) {
        let marbles = randomMarbles(seed: seed)
        let interval: Int64 = 100
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<[Int]>(scheduler: scheduler)
        source.collect(.byTime(scheduler, .milliseconds(interval))).subscribe(out)
        for (ms, value) in marbles.values { scheduler.at(ms) { source.send(value) } }
        scheduler.at(marbles.end) { source.send(completion: marbles.fails ? .failure(.oops) : .finished) }
        scheduler.run()
        // Ticks at k × interval; a value at a tick's exact time was queued first, so it joins that tick.
        var expected: [Stamped<[Int]>] = [.at(0, .subscription)]
        var group: [Int] = []
        var tick = interval
        var remaining = marbles.values[...]
        // The completion at a tick's exact time was queued before the timer: it wins.
        while tick < marbles.end {
            while let first = remaining.first, first.ms <= tick { group.append(first.value); remaining.removeFirst() }
            if !group.isEmpty { expected.append(.at(tick, .value(group))); group = [] }
            tick += interval
        }
        group += remaining.map(\.value)
        if marbles.fails {
            expected.append(.at(marbles.end, .failure(.oops)))
        } else {
            if !group.isEmpty { expected.append(.at(marbles.end, .value(group))) }
            expected.append(.at(marbles.end, .finished))
        }
        #expect(out.timeline == expected, "seed \(seed)")
        #expect(scheduler.isIdle)
    }
}

@Suite("Timing: reentrancy")
struct TimingReentrancyTests {
    @Test func debounceDownstreamCancelsInsideReceive() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        out.onValue = { _ in out.cancel(); return .unlimited }
        source.debounce(for: .milliseconds(10), scheduler: scheduler).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(20) { source.send(2) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(10, .value(1))])
        #expect(source.cancellations == 1)
        #expect(scheduler.isIdle)
    }

    @Test func throttleCancelInsideTheLastValueSuppressesTheCompletion() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        out.onValue = { value in if value == 2 { out.cancel() }; return .none }
        source.throttle(for: .milliseconds(100), scheduler: scheduler, latest: true).subscribe(out)
        scheduler.at(0) { source.send(1) }
        scheduler.at(10) { source.send(2) }
        scheduler.at(20) { source.send(completion: .finished) }
        scheduler.advance(by: .seconds(1))
        #expect(out.timeline == [.at(0, .subscription), .at(0, .value(1)), .at(100, .value(2))])
        #expect(scheduler.isIdle)
    }

    @Test func delayDownstreamRequestsInsideReceive() {
        let scheduler = TestScheduler()
        let source = DemandProbe<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler, initialDemand: .max(1))
        out.onValue = { _ in out.request(.max(3)); return .max(1) }
        source.delay(for: .milliseconds(5), scheduler: scheduler).subscribe(out)
        source.send(1)
        scheduler.advance(by: .milliseconds(5))
        #expect(source.requests == [.max(1), .max(3), .max(1)])
    }

    @Test func receiveOnSubjectSendFromInsideReceiveIsQueuedBehind() {
        let scheduler = TestScheduler()
        let subject = HubEngine.PassthroughSubject<Int, TestError>()
        let out = TimelineRecorder<Int>(scheduler: scheduler)
        out.onValue = { value in if value == 1 { subject.send(10) }; return .none }
        subject.receive(on: scheduler).subscribe(out)
        subject.send(1)
        subject.send(2)
        scheduler.advance()
        #expect(out.timeline.map(\.event) == [.subscription, .value(1), .value(2), .value(10)])
    }
}
