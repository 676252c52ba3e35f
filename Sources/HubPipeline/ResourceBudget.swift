import HubEngine
import HubWire

/// What the pipelines of one owner (a subscription, a connection, an identity) may spend:
/// evaluation work per second (a token bucket of steps) and memory held (bytes), so that
/// no client can make the broker spend more than its share.
///
/// Budgets form a chain: a subscription's budget has its connection's as ``parent``, and
/// a connection's has its identity's. Spending is checked and recorded at every level,
/// and the first level that is exhausted is named in the `limit_exceeded` error.
///
/// Work is counted in evaluation steps (one expression node evaluated, one element
/// measured, a nested pipeline built, a retry); the bucket holds at most ``Limits/burst``
/// steps and refills at ``Limits/stepsPerSecond`` on ``clock``. Memory is what buffers,
/// `collect`, `zip` and compiled pipelines hold, estimated from the values' sizes
/// (``HubValue/Value/estimatedBytes``) and released when they let go. Confined to the
/// hub's event loop.
public final class ResourceBudget {
    /// The bounds of one budget.
    public struct Limits: Hashable, Sendable {
        /// Steps added to the bucket per second.
        public var stepsPerSecond: Int
        /// The most steps the bucket holds (the longest burst of work).
        public var burst: Int
        /// The most bytes held at once.
        public var maxBytes: Int
        /// The most timers (`timer`, and the timers of time-based operators' sources) live at once.
        public var maxTimers: Int

        /// Bounds for a budget.
        public init(stepsPerSecond: Int, burst: Int, maxBytes: Int, maxTimers: Int) {
            self.stepsPerSecond = stepsPerSecond
            self.burst = burst
            self.maxBytes = maxBytes
            self.maxTimers = maxTimers
        }

        /// The default bounds of one connection's pipelines: 5 million steps a second
        /// (a few percent of the event loop), bursts of 10 million, 64 MiB, 1,000 timers.
        public static let connection = Limits(
            stepsPerSecond: 5_000_000, burst: 10_000_000, maxBytes: 64 << 20, maxTimers: 1000)
        /// The default bounds of one identity's pipelines (over all its connections):
        /// twice a connection's.
        public static let identity = Limits(
            stepsPerSecond: 10_000_000, burst: 20_000_000, maxBytes: 128 << 20, maxTimers: 2000)
        /// No bounds (a budget that only records).
        public static let unbounded = Limits(stepsPerSecond: .max, burst: .max, maxBytes: .max, maxTimers: .max)
    }

    /// Whose budget this is, for error messages ("this connection", "identity 'ingest'").
    public let owner: String
    /// The bounds.
    public let limits: Limits
    /// The budget spending here is also charged to.
    public let parent: ResourceBudget?
    /// The clock the bucket refills by.
    public let clock: () -> SchedulerTime

    private var tokens: Int
    private var refilledAt: Int64
    /// Bytes held now.
    public private(set) var heldBytes = 0
    /// Timers live now.
    public private(set) var liveTimers = 0
    /// Steps spent since the budget was made (for statistics and tests).
    public private(set) var stepsSpent = 0

    /// A budget with a full bucket.
    public init(owner: String, limits: Limits, parent: ResourceBudget? = nil, clock: @escaping () -> SchedulerTime) {
        self.owner = owner
        self.limits = limits
        self.parent = parent
        self.clock = clock
        tokens = limits.burst
        refilledAt = clock().nanoseconds
    }

    // MARK: Work

    /// The steps that may be spent now: the least over the chain (refilling as time passed).
    public func available() -> Int {
        let now = clock().nanoseconds
        var least = refill(now)
        var level = parent
        while let budget = level {
            least = min(least, budget.refill(now))
            level = budget.parent
        }
        return max(0, least)
    }

    /// Records `steps` spent at every level (they may overdraw a bucket: the debt is paid
    /// from later refills).
    public func spend(_ steps: Int) {
        guard steps > 0 else { return }
        var level: ResourceBudget? = self
        while let budget = level {
            budget.tokens = budget.tokens &- steps
            budget.stepsSpent &+= steps
            level = budget.parent
        }
    }

    /// Spends `steps`, or throws `limit_exceeded` naming the exhausted level when the
    /// bucket of any level holds fewer.
    public func charge(_ steps: Int, for what: @autoclosure () -> String) throws(HubError) {
        if let exhausted = firstExhausted(needing: steps) {
            throw exhausted.workError(what())
        }
        spend(steps)
    }

    /// The `limit_exceeded` error of work refused by the first level without `steps` left.
    public func workError(needing steps: Int, _ what: String) -> HubError {
        (firstExhausted(needing: steps) ?? self).workError(what)
    }

    private func firstExhausted(needing steps: Int) -> ResourceBudget? {
        let now = clock().nanoseconds
        var level: ResourceBudget? = self
        while let budget = level {
            if budget.refill(now) < steps { return budget }
            level = budget.parent
        }
        return nil
    }

    private func workError(_ what: String) -> HubError {
        HubError(
            .limitExceeded,
            "\(what): \(owner) used its evaluation budget (\(limits.stepsPerSecond) steps a second)",
            data: ["limit": .string("stepsPerSecond"), "value": .int(Int64(limits.stepsPerSecond))])
    }

    /// Adds what the time since the last refill earned, up to the burst; returns the tokens.
    private func refill(_ now: Int64) -> Int {
        guard tokens < limits.burst, limits.stepsPerSecond != .max else { return tokens }
        let elapsed = now &- refilledAt
        guard elapsed > 0 else { return tokens }
        let (product, overflow) = Int(elapsed).multipliedReportingOverflow(by: limits.stepsPerSecond)
        let earned = overflow ? limits.burst : product / 1_000_000_000
        // Less than one step earned: the interval keeps counting from the last refill.
        guard earned > 0 else { return tokens }
        tokens = tokens > limits.burst &- earned ? limits.burst : tokens &+ earned
        refilledAt = now
        return tokens
    }

    // MARK: Memory

    /// Holds `bytes` more at every level, or throws `limit_exceeded` naming the level that
    /// would pass its ``Limits/maxBytes`` (nothing is held then).
    public func hold(bytes: Int, for what: @autoclosure () -> String) throws(HubError) {
        var level: ResourceBudget? = self
        while let budget = level {
            if budget.heldBytes > budget.limits.maxBytes - bytes {
                throw HubError(
                    .limitExceeded,
                    "\(what()): \(budget.owner) would hold more than \(budget.limits.maxBytes) bytes",
                    data: ["limit": .string("maxBytes"), "value": .int(Int64(budget.limits.maxBytes))])
            }
            level = budget.parent
        }
        level = self
        while let budget = level {
            budget.heldBytes += bytes
            level = budget.parent
        }
    }

    /// Lets go of `bytes` held with ``hold(bytes:for:)``.
    public func release(bytes: Int) {
        guard bytes > 0 else { return }
        var level: ResourceBudget? = self
        while let budget = level {
            budget.heldBytes -= bytes
            level = budget.parent
        }
    }

    /// A hold of `bytes` that is let go of when the returned lease is released (or freed).
    public func lease(bytes: Int, for what: @autoclosure () -> String) throws(HubError) -> ResourceLease {
        try hold(bytes: bytes, for: what())
        return ResourceLease(budget: self, bytes: bytes)
    }

    // MARK: Timers

    /// Counts one more live timer at every level, or throws `limit_exceeded` naming the
    /// level that is at its ``Limits/maxTimers``. The returned lease gives it back.
    public func startTimer(for what: @autoclosure () -> String) throws(HubError) -> ResourceLease {
        var level: ResourceBudget? = self
        while let budget = level {
            if budget.liveTimers >= budget.limits.maxTimers {
                throw HubError(
                    .limitExceeded, "\(what()): \(budget.owner) has \(budget.limits.maxTimers) timers running",
                    data: ["limit": .string("maxTimers"), "value": .int(Int64(budget.limits.maxTimers))])
            }
            level = budget.parent
        }
        level = self
        while let budget = level {
            budget.liveTimers += 1
            level = budget.parent
        }
        return ResourceLease(budget: self, timers: 1)
    }

    fileprivate func releaseTimers(_ count: Int) {
        var level: ResourceBudget? = self
        while let budget = level {
            budget.liveTimers -= count
            level = budget.parent
        }
    }
}

/// Memory or timers held from a ``ResourceBudget``, given back by ``release()`` or when
/// the lease is freed (whichever comes first): a pipeline stage keeps its lease for as
/// long as it holds what it accounts for, so a torn-down subscription gives everything back.
public final class ResourceLease {
    private let budget: ResourceBudget
    /// Bytes held by this lease.
    public private(set) var bytes: Int
    private var timers: Int

    fileprivate init(budget: ResourceBudget, bytes: Int = 0, timers: Int = 0) {
        self.budget = budget
        self.bytes = bytes
        self.timers = timers
    }

    /// A lease holding nothing yet, on `budget`.
    public convenience init(on budget: ResourceBudget) {
        self.init(budget: budget)
    }

    /// "the bytes of OWNER (N)", for messages.
    public var budgetDescription: String { "the \(budget.limits.maxBytes) bytes of \(budget.owner)" }

    /// Holds `more` bytes under this lease (see ``ResourceBudget/hold(bytes:for:)``).
    public func hold(_ more: Int, for what: @autoclosure () -> String) throws(HubError) {
        try budget.hold(bytes: more, for: what())
        bytes += more
    }

    /// Gives back `fewer` of this lease's bytes.
    public func release(_ fewer: Int) {
        let amount = min(fewer, bytes)
        bytes -= amount
        budget.release(bytes: amount)
    }

    /// Gives back everything; idempotent.
    public func release() {
        budget.release(bytes: bytes)
        bytes = 0
        if timers > 0 {
            budget.releaseTimers(timers)
            timers = 0
        }
    }

    deinit { release() }
}
