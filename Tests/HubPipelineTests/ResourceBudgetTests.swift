import HubEngine
import HubPipeline
import HubTesting
import HubWire
import Testing

@Suite("Resource budgets")
struct ResourceBudgetTests {
    static func limits(steps: Int = 1000, burst: Int = 2000, bytes: Int = 100, timers: Int = 2) -> ResourceBudget.Limits {
        ResourceBudget.Limits(stepsPerSecond: steps, burst: burst, maxBytes: bytes, maxTimers: timers)
    }

    @Test func theBucketRefillsWithTimeUpToTheBurst() throws {
        let scheduler = TestScheduler()
        let budget = ResourceBudget(owner: "this connection", limits: Self.limits(), clock: { scheduler.now })
        #expect(budget.available() == 2000)
        try budget.charge(1500, for: "map(.)")
        #expect(budget.available() == 500)
        #expect(throws: HubError.self) { try budget.charge(501, for: "map(.)") }
        scheduler.advance(by: .milliseconds(250))  // 250 steps earned
        #expect(budget.available() == 750)
        scheduler.advance(by: .seconds(10))
        #expect(budget.available() == 2000)
        // Spending may overdraw: the debt is paid from later refills.
        budget.spend(2500)
        #expect(budget.available() == 0)
        scheduler.advance(by: .seconds(1))
        #expect(budget.available() == 500)
        #expect(budget.stepsSpent == 4000)
    }

    @Test func aChainIsBoundedByItsTightestLevelAndNamesIt() throws {
        let scheduler = TestScheduler()
        let identity = ResourceBudget(owner: "identity 'dash'", limits: Self.limits(burst: 1000, bytes: 150), clock: { scheduler.now })
        let first = ResourceBudget(owner: "this connection", limits: Self.limits(), parent: identity, clock: { scheduler.now })
        let second = ResourceBudget(owner: "this connection", limits: Self.limits(), parent: identity, clock: { scheduler.now })
        try first.charge(800, for: "a")
        #expect(second.available() == 200)
        do {
            try second.charge(300, for: "map(.x)")
            Issue.record("expected limit_exceeded")
        } catch {
            #expect(error.code == .limitExceeded)
            #expect(error.message == "map(.x): identity 'dash' used its evaluation budget (1000 steps a second)")
        }
        try first.hold(bytes: 100, for: "buffer")
        do {
            try second.hold(bytes: 60, for: "collect()")
            Issue.record("expected limit_exceeded")
        } catch {
            #expect(error.message == "collect(): identity 'dash' would hold more than 150 bytes")
        }
        #expect(second.heldBytes == 0 && identity.heldBytes == 100)
        first.release(bytes: 100)
        #expect(identity.heldBytes == 0)
    }

    @Test func leasesGiveEverythingBackWhenReleasedOrFreed() throws {
        let budget = ResourceBudget(owner: "this connection", limits: Self.limits(), clock: { .zero })
        var lease: ResourceLease? = try budget.lease(bytes: 40, for: "x")
        try lease?.hold(30, for: "x")
        #expect(budget.heldBytes == 70)
        lease?.release(10)
        #expect(budget.heldBytes == 60)
        lease = nil
        #expect(budget.heldBytes == 0)
        let timer = try budget.startTimer(for: "timer(10ms)")
        _ = try budget.startTimer(for: "timer(10ms)")  // freed at once
        let kept = try budget.startTimer(for: "timer(10ms)")
        #expect(budget.liveTimers == 2)
        #expect(throws: HubError.self) { try budget.startTimer(for: "timer(10ms)") }
        timer.release()
        timer.release()
        #expect(budget.liveTimers == 1)
        withExtendedLifetime(kept) {}
    }
}
