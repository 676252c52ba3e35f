/// The loop's timers: a binary min-heap ordered by deadline, then by insertion order,
/// so that timers due at the same time fire in the order they were scheduled.
struct TimerQueue {
    /// One scheduled action. Cancelling clears `action`; the entry leaves the heap lazily.
    final class Entry {
        var deadline: Int64
        let interval: Int64?
        var sequence: UInt64
        var action: (() -> Void)?

        init(deadline: Int64, interval: Int64?, sequence: UInt64, action: @escaping () -> Void) {
            self.deadline = deadline
            self.interval = interval
            self.sequence = sequence
            self.action = action
        }

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0

    /// Adds a timer.
    mutating func insert(deadline: Int64, interval: Int64?, action: @escaping () -> Void) -> Entry {
        let entry = Entry(deadline: deadline, interval: interval, sequence: nextSequence, action: action)
        nextSequence &+= 1
        push(entry)
        return entry
    }

    /// Cancels `entry`; idempotent.
    mutating func cancel(_ entry: Entry) {
        entry.action = nil
        dropCancelledTop()
    }

    /// The earliest live deadline.
    var nextDeadline: Int64? {
        heap.first?.deadline
    }

    /// The sequence number the next inserted (or re-armed) timer gets.
    var sequenceMark: UInt64 { nextSequence }

    /// Removes and returns the next action due at `now` among the timers inserted before
    /// `mark` (so that actions re-arming timers due at once cannot keep one pass going);
    /// a repeating timer is put back at its next deadline, never earlier than `now`.
    mutating func popDue(now: Int64, before mark: UInt64) -> (() -> Void)? {
        dropCancelledTop()
        guard let top = heap.first, top.deadline <= now, top.sequence < mark, let action = top.action else {
            return nil
        }
        popTop()
        if let interval = top.interval {
            let (next, overflow) = top.deadline.addingReportingOverflow(max(interval, 1))
            top.deadline = overflow ? .max : max(next, now)
            top.sequence = nextSequence
            nextSequence &+= 1
            push(top)
        } else {
            top.action = nil
        }
        return action
    }

    /// Drops every timer.
    mutating func removeAll() {
        for entry in heap { entry.action = nil }
        heap.removeAll()
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, top.action == nil { popTop() }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
