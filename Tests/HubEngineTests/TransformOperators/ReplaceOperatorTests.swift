import HubEngine
import Testing
import HubTesting

/// replaceEmpty(with:) and replaceError(with:): the replacement value waits for demand.
@Suite("TransformOperators: replaceEmpty and replaceError")
struct ReplaceOperatorTests {
    typealias Probe = DemandProbe<Int, TestError>

    // MARK: replaceEmpty

    @Test func replaceEmptyRequestsUnlimitedAndForwardsDownstreamDemand() {
        // As Combine/OpenCombine: .unlimited upstream right after the subscription is handed down,
        // and the downstream's own requests are forwarded as well.
        let probe = Probe()
        let recorder = probe.replaceEmpty(with: -1).record(initialDemand: .max(1))
        #expect(probe.requests == [.max(1), .unlimited])
        recorder.request(.max(2))
        #expect(probe.requests == [.max(1), .unlimited, .max(2)])
        recorder.request(.none)
        #expect(probe.requests.count == 3)
    }

    @Test func replaceEmptyHoldsTheReplacementUntilDemand() {
        let probe = Probe()
        let recorder = probe.replaceEmpty(with: -1).record(initialDemand: .none)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(-1), .finished])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(-1), .finished])
    }

    @Test func replaceEmptyPassesValuesAndFailures() {
        let probe = Probe()
        let recorder = probe.replaceEmpty(with: -1).record(demandPerValue: .max(1))
        #expect(probe.send(3) == .max(1))
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(3), .finished])

        let failing = Probe()
        let failed = failing.replaceEmpty(with: -1).record(initialDemand: .none)
        failing.send(completion: .failure(.oops))
        #expect(failed.events == [.subscription, .failure(.oops)])
    }

    @Test func replaceEmptyCancelStopsEverythingEvenAHeldReplacement() {
        let probe = Probe()
        let recorder = probe.replaceEmpty(with: -1).record(initialDemand: .none)
        recorder.cancel()
        recorder.cancel()
        #expect(probe.cancellations == 1)
        probe.send(completion: .finished)
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])

        let held = Probe()
        let holder = held.replaceEmpty(with: -1).record(initialDemand: .none)
        held.send(completion: .finished)
        holder.cancel()
        holder.request(.max(1))
        #expect(holder.events == [.subscription])
    }

    // MARK: replaceError

    @Test func replaceErrorPassesDemandThrough() {
        let probe = Probe()
        let recorder = probe.replaceError(with: -1).record(initialDemand: .max(2), demandPerValue: .max(1))
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(1) == .max(1))
        recorder.request(.none)
        #expect(probe.requests == [.max(2)])
    }

    @Test func replaceErrorWithDemandSendsTheValueAndFinishes() {
        let probe = Probe()
        let recorder = probe.replaceError(with: -1).record(initialDemand: .max(2))
        probe.send(1)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(1), .value(-1), .finished])
    }

    @Test func replaceErrorWithoutDemandHoldsTheValue() {
        let probe = Probe()
        let recorder = probe.replaceError(with: -1).record(initialDemand: .max(1))
        probe.send(1)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(1)])
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription, .value(1), .value(-1), .finished])
        recorder.request(.max(1))
        #expect(recorder.events.count == 4)
    }

    @Test func replaceErrorPassesFinished() {
        let probe = Probe()
        let recorder = probe.replaceError(with: -1).record(initialDemand: .none)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .finished])
    }

    @Test func replaceErrorCancelDropsAHeldValue() {
        let probe = Probe()
        let recorder = probe.replaceError(with: -1).record(initialDemand: .none)
        probe.send(completion: .failure(.oops))
        recorder.cancel()
        recorder.request(.max(1))
        #expect(recorder.events == [.subscription])

        let live = Probe()
        let cancelled = live.replaceError(with: -1).record()
        cancelled.cancel()
        cancelled.cancel()
        #expect(live.cancellations == 1)
        live.send(1)
        live.send(completion: .failure(.oops))
        #expect(cancelled.events == [.subscription])
    }
}
