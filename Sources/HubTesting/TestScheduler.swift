import HubEngine

/// A scheduler in virtual time for tests: nothing runs until the test advances the clock.
///
/// ``now`` starts at ``SchedulerTime/zero``. Actions wait in a queue ordered by
/// their due time, and by the order they were scheduled for equal times (FIFO).
/// ``advance(by:)`` and ``advance(to:)`` run every action due up to the new
/// time, in that order, moving ``now`` to each action's time while it runs; an
/// action may schedule more actions, which run in the same call if they fall
/// due. ``schedule(_:)`` queues the action at the current time: it runs on the
/// next advance (even `advance(by: .zero)`), never on the caller's stack.
///
/// Every scheduled action can be cancelled; ``pendingActionCount`` counts the
/// actions still queued (cancelled ones are not counted), so a test can check
/// that an operator released all of its timers.
///
/// Confined to one thread, as every engine object.
public final class TestScheduler: Scheduler {
    /// One queued action.
    private struct Entry {
        let time: SchedulerTime
        let sequence: UInt64
        let id: UInt64
    }

    /// What an action id stands for while it is queued.
    private struct Action {
        let body: () -> Void
        /// The repeat interval, or `nil` for a one-shot action.
        let interval: Duration?
    }

    /// The current virtual time.
    public private(set) var now: SchedulerTime = .zero

    /// A min-heap of entries keyed by (time, sequence).
    private var heap: [Entry] = []
    /// Live actions by id; a cancelled action is removed here and its heap entry skipped.
    private var actions: [UInt64: Action] = [:]
    private var nextSequence: UInt64 = 0
    private var nextID: UInt64 = 0

    /// A scheduler whose clock reads zero and whose queue is empty.
    public init() {}

    /// How many actions are queued and not cancelled (a repeating action counts once).
    public var pendingActionCount: Int { actions.count }

    /// Whether no action is queued.
    public var isIdle: Bool { actions.isEmpty }

    /// Queues `action` at the current time; it runs on the next advance.
    public func schedule(_ action: @escaping () -> Void) {
        enqueue(at: now, Action(body: action, interval: nil))
    }

    /// Queues `action` at `date` (or now, if `date` is past).
    @discardableResult
    public func schedule(after date: SchedulerTime, _ action: @escaping () -> Void) -> any Cancellable {
        let id = enqueue(at: max(date, now), Action(body: action, interval: nil))
        return Token(scheduler: self, id: id)
    }

    /// Queues `action` at `date` (or now, if past), then every `interval` after each run, until cancelled.
    /// A non-positive `interval` is taken as one nanosecond, so that virtual time always moves on.
    @discardableResult
    public func schedule(after date: SchedulerTime, interval: Duration, _ action: @escaping () -> Void) -> any Cancellable {
        let step = interval > .zero ? interval : .nanoseconds(1)
        let id = enqueue(at: max(date, now), Action(body: action, interval: step))
        return Token(scheduler: self, id: id)
    }

    /// Moves the clock forward by `interval` (default zero), running every action due up to the new time.
    public func advance(by interval: Duration = .zero) {
        advance(to: now.advanced(by: interval))
    }

    /// Moves the clock to `time`, running every action due up to it; a past `time` only runs what is due now.
    public func advance(to time: SchedulerTime) {
        let target = max(time, now)
        while let entry = popLive(dueBy: target) {
            run(entry)
        }
        now = target
    }

    /// Runs queued actions in time order until the queue is empty, moving the clock to each.
    ///
    /// Repeating actions would never empty the queue, so `run()` stops as soon as
    /// only repeating actions remain queued (they stay queued, and the clock stays at
    /// the last action run), and in any case after `maxSteps` actions.
    /// - Returns: the number of actions run.
    @discardableResult
    public func run(maxSteps: Int = 100_000) -> Int {
        var steps = 0
        while steps < maxSteps, actions.values.contains(where: { $0.interval == nil }),
              let entry = popLive(dueBy: SchedulerTime(nanoseconds: .max)) {
            run(entry)
            steps += 1
        }
        return steps
    }

    // MARK: - Queue

    @discardableResult
    private func enqueue(at time: SchedulerTime, _ action: Action, id existing: UInt64? = nil) -> UInt64 {
        let id: UInt64
        if let existing {
            id = existing
        } else {
            id = nextID
            nextID += 1
            actions[id] = action
        }
        push(Entry(time: time, sequence: nextSequence, id: id))
        nextSequence += 1
        return id
    }

    private func run(_ entry: Entry) {
        guard let action = actions[entry.id] else { return }
        now = max(now, entry.time)
        if action.interval == nil { actions[entry.id] = nil }
        action.body()
        // A repeating action runs again unless it was cancelled while running.
        if let interval = action.interval, actions[entry.id] != nil {
            enqueue(at: entry.time.advanced(by: interval), action, id: entry.id)
        }
    }

    fileprivate func cancel(_ id: UInt64) {
        actions[id] = nil
        if actions.isEmpty { heap.removeAll(keepingCapacity: true) }
    }

    /// Pops the earliest live entry due at or before `limit`, discarding cancelled ones.
    private func popLive(dueBy limit: SchedulerTime) -> Entry? {
        while let top = heap.first {
            if actions[top.id] == nil {
                _ = pop()
                continue
            }
            return top.time <= limit ? pop() : nil
        }
        return nil
    }

    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.time != b.time ? a.time < b.time : a.sequence < b.sequence
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, Self.precedes(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, Self.precedes(heap[right], heap[smallest]) { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }

    /// Cancels one queued action; idempotent.
    private final class Token: Cancellable {
        private weak var scheduler: TestScheduler?
        private let id: UInt64
        init(scheduler: TestScheduler, id: UInt64) {
            self.scheduler = scheduler
            self.id = id
        }
        func cancel() { scheduler?.cancel(id) }
    }
}
