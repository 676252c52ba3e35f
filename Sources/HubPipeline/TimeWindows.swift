import DequeModule
import HeapModule
import HubEngine
import HubValue
import HubWire

/// `tumbling(size, aggregate)`, `hopping(size, advance, aggregate)` and
/// `session(gap, aggregate)`, with `key:`, `time:`, `lateness:`, `early:` and `maxWindows:`:
/// the values grouped by key into windows of time, each window's aggregate emitted as
/// `{"key": k, "start": ms, "end": ms, "value": v, "final": true}` when it closes.
///
/// - **Time.** Arrival time (the broker's calendar clock when the value arrives) by
///   default; with `time: e`, event time: `e` of the value, in milliseconds since the
///   Unix epoch. Windows are aligned on multiples of their size (or advance) from the
///   epoch. A session window holds a key's values while each comes within `gap` of the
///   previous one (in event time, sessions that a value brings within `gap` merge); its
///   `end` is the time of its last value.
/// - **Closing.** In arrival time a window closes when the clock reaches its end (a
///   session: its last value's time plus `gap`). In event time the **watermark** is the
///   latest event time seen; a window closes once the watermark has passed its end by
///   `lateness` (default 0): until then a value that arrives out of order still counts;
///   after, it is **late** and dropped (counted). With `early: d`, the windows whose
///   aggregate changed are also emitted every `d` with `"final": false`. When the
///   upstream finishes every open window is emitted, then it finishes.
/// - **Demand** as a time-grouping operator (`collect(every:)`): the upstream is asked for
///   `.unlimited`; a closed window's result that finds no demand waits (at most
///   `bufferLimit` of them, beyond which the operator fails with `overflow`).
/// - **Bounded.** At most `maxWindows` windows are open at once: a value that would open
///   one more closes (emits) the one due to close first.
/// - **Checkpoints.** With a `state`, the open windows (key, bounds, aggregate so far),
///   the watermark and the count of late values are checkpointed; arrival-time windows
///   keep their calendar bounds, so a window whose end passed while the broker was down
///   closes as soon as it is restored.
struct TimeWindows: Publisher {
    typealias Output = Value
    typealias Failure = HubError

    enum Shape {
        case tumbling(size: Int64)
        case hopping(size: Int64, advance: Int64)
        case session(gap: Int64)
    }

    let upstream: AnyPublisher<Value, HubError>
    let shape: Shape
    let aggregate: WindowAggregate
    let key: ((Value) throws(HubError) -> Value)?
    /// Event time in milliseconds; `nil`: arrival time.
    let time: ((Value) throws(HubError) -> Value)?
    let lateness: Int64
    let early: Duration?
    let maxWindows: Int
    let scheduler: any Scheduler
    /// The calendar clock (nanoseconds since the Unix epoch).
    let wallClock: () -> SchedulerTime
    let bufferLimit: Int
    let state: OperatorStateSlot?

    func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
        upstream.receive(subscriber: Inner(downstream: subscriber, configuration: self))
    }

    /// A window: its key and start.
    struct WindowID: Hashable {
        var key: Value
        var start: Int64
    }

    /// When a window closes (its end, plus the lateness in event time), in the order windows opened.
    struct Closing: Comparable {
        var at: Int64
        var sequence: UInt64
        var id: WindowID

        static func < (lhs: Closing, rhs: Closing) -> Bool {
            (lhs.at, lhs.sequence) < (rhs.at, rhs.sequence)
        }

        static func == (lhs: Closing, rhs: Closing) -> Bool { lhs.at == rhs.at && lhs.sequence == rhs.sequence }
    }

    final class Inner<Downstream: Subscriber>: Subscriber, Subscription
    where Downstream.Input == Value, Downstream.Failure == HubError {
        typealias Input = Value
        typealias Failure = HubError

        private final class Window {
            var end: Int64
            var accumulator: WindowAggregate.Accumulator
            var changed = false
            /// The sequence of its current entry in the closing heap.
            var sequence: UInt64

            init(end: Int64, accumulator: WindowAggregate.Accumulator, sequence: UInt64) {
                self.end = end
                self.accumulator = accumulator
                self.sequence = sequence
            }
        }

        private var downstream: Downstream?
        private let configuration: TimeWindows
        private var upstream: (any Subscription)?
        private var demand = Subscribers.Demand.none
        private var buffered = Deque<Value>()
        private var delivering = false
        private var windows: [WindowID: Window] = [:]
        /// A key's sessions' starts, in order (session windows only).
        private var sessions: [Value: [Int64]] = [:]
        private var closing = Heap<Closing>()
        private var sequence: UInt64 = 0
        /// The latest event time seen (event time only).
        private var watermark: Int64?
        /// Values that came after their windows closed.
        private(set) var late: Int64 = 0
        private var timer: (any Cancellable)?
        private var timerAt: Int64?
        private var earlyTimer: (any Cancellable)?

        init(downstream: Downstream, configuration: TimeWindows) {
            self.downstream = downstream
            self.configuration = configuration
        }

        private var eventTime: Bool { configuration.time != nil }

        /// The calendar clock in milliseconds.
        private var now: Int64 { configuration.wallClock().nanoseconds / 1_000_000 }

        // MARK: Upstream

        func receive(subscription: any Subscription) {
            guard upstream == nil, downstream != nil else {
                subscription.cancel()
                return
            }
            upstream = subscription
            if let slot = configuration.state { checkpoint(slot) }
            if let early = configuration.early {
                let scheduler = configuration.scheduler
                earlyTimer = scheduler.schedule(after: scheduler.now.advanced(by: early), interval: early) { [weak self] in
                    self?.emitEarly()
                }
            }
            downstream?.receive(subscription: self)
            upstream?.request(.unlimited)
            if !eventTime { closeDue() }
        }

        func receive(_ input: Value) -> Subscribers.Demand {
            guard downstream != nil else { return .none }
            do throws(HubError) {
                try add(input)
            } catch {
                fail(error)
            }
            return .none
        }

        func receive(completion: Subscribers.Completion<HubError>) {
            guard downstream != nil, upstream != nil else { return }
            upstream = nil
            timer.take()?.cancel()
            earlyTimer.take()?.cancel()
            switch completion {
            case .failure(let error):
                fail(error)
            case .finished:
                // Every open window's result, in the order they would have closed.
                while let next = closing.popMin() { close(next) }
                finishIfDone()
            }
        }

        // MARK: Downstream

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0, downstream != nil else { return }
            self.demand += demand
            drain()
            finishIfDone()
        }

        func cancel() {
            guard downstream.take() != nil else { return }
            end()
            upstream.take()?.cancel()
        }

        // MARK: Windows

        private func add(_ value: Value) throws(HubError) {
            let key = try configuration.key?(value) ?? .null
            let time: Int64
            if let timeOf = configuration.time {
                let stamp = try timeOf(value)
                guard let ms = stamp.numberAsDouble, ms.isFinite, abs(ms) < 9.2e18 else {
                    throw HubError(.failed, "window: the time of a value must be a number of milliseconds, got \(ExpressionEvaluator.typeName(stamp))")
                }
                time = Int64(ms.rounded(.down))
            } else {
                time = now
            }
            switch configuration.shape {
            case let .tumbling(size):
                let start = Self.floor(time, size)
                if !(try fold(value, key: key, start: start, end: start + size)) { late += 1 }
            case let .hopping(size, advance):
                var start = Self.floor(time, advance)
                var counted = false
                while start > time - size {
                    if try fold(value, key: key, start: start, end: start + size) { counted = true }
                    start -= advance
                }
                if !counted { late += 1 }
            case let .session(gap):
                try session(value, key: key, time: time, gap: gap)
            }
            if eventTime {
                if time > watermark ?? .min { watermark = time }
                if let watermark { close(through: watermark) }
            } else {
                scheduleTimer()
            }
        }

        /// Folds `value` into the window of `key` starting at `start` (opening it if needed);
        /// `false` when that window has closed already (the value is late).
        private func fold(_ value: Value, key: Value, start: Int64, end: Int64) throws(HubError) -> Bool {
            let id = WindowID(key: key, start: start)
            if let window = windows[id] {
                try configuration.aggregate.add(value, to: &window.accumulator)
                window.changed = true
                return true
            }
            if eventTime, let watermark, end + configuration.lateness <= watermark { return false }
            let window = open(id, end: end)
            try configuration.aggregate.add(value, to: &window.accumulator)
            window.changed = true
            return true
        }

        private func open(_ id: WindowID, end: Int64) -> Window {
            // Entries of windows that grew or merged since are stale: skip to a live one.
            while windows.count >= configuration.maxWindows, let first = closing.popMin() { close(first) }
            sequence += 1
            let window = Window(end: end, accumulator: configuration.aggregate.empty, sequence: sequence)
            windows[id] = window
            closing.insert(Closing(at: closeTime(end), sequence: sequence, id: id))
            return window
        }

        private func closeTime(_ end: Int64) -> Int64 {
            if case let .session(gap) = configuration.shape {
                return end + gap + (eventTime ? configuration.lateness : 0)
            }
            return end + (eventTime ? configuration.lateness : 0)
        }

        private func session(_ value: Value, key: Value, time: Int64, gap: Int64) throws(HubError) {
            var starts = sessions[key] ?? []
            // The sessions the value reaches (within gap of their values).
            var merged: [Int64] = []
            for start in starts {
                guard let window = windows[WindowID(key: key, start: start)] else { continue }
                if time >= start - gap, time <= window.end + gap { merged.append(start) }
            }
            if merged.isEmpty {
                if eventTime, let watermark, time + gap + configuration.lateness <= watermark {
                    late += 1
                    return
                }
                let window = open(WindowID(key: key, start: time), end: time)
                try configuration.aggregate.add(value, to: &window.accumulator)
                window.changed = true
                starts.append(time)
                starts.sort()
                sessions[key] = starts
                return
            }
            // One session from the first start to the last end, the others' values folded in.
            let first = merged[0]
            let target = windows[WindowID(key: key, start: first)]!
            for start in merged.dropFirst() {
                guard let other = windows.removeValue(forKey: WindowID(key: key, start: start)) else { continue }
                configuration.aggregate.merge(other.accumulator, into: &target.accumulator)
                target.end = Swift.max(target.end, other.end)
            }
            starts.removeAll { merged.dropFirst().contains($0) }
            var keyID = WindowID(key: key, start: first)
            if time < first {
                // The session starts earlier now.
                windows[keyID] = nil
                keyID = WindowID(key: key, start: time)
                windows[keyID] = target
                starts.removeAll { $0 == first }
                starts.append(time)
                starts.sort()
            }
            sessions[key] = starts
            target.end = Swift.max(target.end, time)
            try configuration.aggregate.add(value, to: &target.accumulator)
            target.changed = true
            sequence += 1
            target.sequence = sequence
            closing.insert(Closing(at: closeTime(target.end), sequence: sequence, id: keyID))
        }

        /// Closes every window due by `time`.
        private func close(through time: Int64) {
            while let first = closing.min, first.at <= time {
                close(closing.removeMin())
            }
        }

        /// Emits the window of `entry` (unless the entry is stale: the window grew since).
        private func close(_ entry: Closing) {
            guard let window = windows[entry.id], window.sequence == entry.sequence else { return }
            windows[entry.id] = nil
            if case .session = configuration.shape {
                sessions[entry.id.key]?.removeAll { $0 == entry.id.start }
                if sessions[entry.id.key]?.isEmpty == true { sessions[entry.id.key] = nil }
            }
            emit(entry.id, window, final: true)
        }

        private func emit(_ id: WindowID, _ window: Window, final: Bool) {
            let end: Int64
            switch configuration.shape {
            case .session: end = window.end
            default: end = window.end
            }
            let output: Value = [
                "key": id.key, "start": .int(id.start), "end": .int(end),
                "value": configuration.aggregate.result(window.accumulator), "final": .bool(final),
            ]
            guard buffered.count < configuration.bufferLimit || demand > 0 else {
                fail(HubError(.overflow, "window: \(configuration.bufferLimit) results wait for demand"))
                return
            }
            buffered.append(output)
            drain()
        }

        private func emitEarly() {
            let changed = windows.filter { $0.value.changed }.sorted { ($0.value.end, $0.key.start) < ($1.value.end, $1.key.start) }
            for (id, window) in changed {
                window.changed = false
                emit(id, window, final: false)
            }
        }

        private func drain() {
            guard !delivering else { return }
            delivering = true
            while demand > 0, let output = buffered.popFirst(), let downstream {
                demand -= 1
                demand += downstream.receive(output)
            }
            delivering = false
        }

        // MARK: Arrival time

        /// Closes the windows due now and sets the timer for the next one.
        private func closeDue() {
            close(through: now)
            scheduleTimer()
        }

        private func scheduleTimer() {
            guard !eventTime, downstream != nil, upstream != nil else { return }
            guard let next = closing.min?.at else {
                timer.take()?.cancel()
                timerAt = nil
                return
            }
            guard timerAt != next else { return }
            timer.take()?.cancel()
            timerAt = next
            let scheduler = configuration.scheduler
            let wait = Duration.milliseconds(Swift.max(0, next - now))
            timer = scheduler.schedule(after: scheduler.now.advanced(by: wait)) { [weak self] in
                guard let self else { return }
                self.timer = nil
                self.timerAt = nil
                self.closeDue()
            }
        }

        // MARK: Ending

        private func finishIfDone() {
            guard upstream == nil, windows.isEmpty, buffered.isEmpty, let downstream = downstream.take() else { return }
            end()
            downstream.receive(completion: .finished)
        }

        private func fail(_ error: HubError) {
            guard let downstream = downstream.take() else { return }
            end()
            upstream.take()?.cancel()
            downstream.receive(completion: .failure(error))
        }

        private func end() {
            timer.take()?.cancel()
            earlyTimer.take()?.cancel()
            windows = [:]
            sessions = [:]
            closing = Heap()
            buffered.removeAll()
        }

        // MARK: Checkpoint

        private func checkpoint(_ slot: OperatorStateSlot) {
            let state = OperatorState(slot: slot, codec: StateCodec<Value>.value)
            let aggregate = configuration.aggregate
            state.restore("window") { snapshot throws(CheckpointError) in
                guard case let .array(items) = try snapshot.field("windows"), case let .array(outputs) = try snapshot.field("buffer") else {
                    throw CheckpointError(.malformed, "the state of a window stage has no arrays 'windows' and 'buffer'")
                }
                var restored: [(WindowID, Int64, WindowAggregate.Accumulator, Bool)] = []
                for item in items {
                    guard case let .array(fields) = item, fields.count == 5, let start = fields[1].intValue,
                          let end = fields[2].intValue, let changed = fields[4].boolValue
                    else { throw CheckpointError(.malformed, "a window is not [key, start, end, aggregate, changed]") }
                    restored.append((WindowID(key: fields[0], start: start), end, try aggregate.decode(fields[3]), changed))
                }
                let watermark = try snapshot.field("watermark", StateCodec<Value>.value.optional).flatMap(\.intValue)
                let late = try snapshot.field("late").intValue ?? 0
                self.watermark = watermark
                self.late = late
                buffered = Deque(outputs)
                for (id, end, accumulator, changed) in restored {
                    let window = open(id, end: end)
                    window.accumulator = accumulator
                    window.changed = changed
                    if case .session = configuration.shape { sessions[id.key, default: []].append(id.start) }
                }
                for key in sessions.keys { sessions[key]?.sort() }
            }
            state.attach("window") { [weak self] in
                guard let self, self.downstream != nil else { return nil }
                // In the order they would close: restored, they open again in that order.
                let open = self.windows.sorted { (self.closeTime($0.value.end), $0.value.sequence) < (self.closeTime($1.value.end), $1.value.sequence) }
                return [
                    "windows": .array(open.map { id, window in
                        [id.key, .int(id.start), .int(window.end), aggregate.encode(window.accumulator), .bool(window.changed)]
                    }),
                    "watermark": StateCodec<Value>.value.optional.encode(self.watermark.map { .int($0) }),
                    "late": .int(self.late),
                    "buffer": .array(Array(self.buffered)),
                ]
            }
        }

        private static func floor(_ time: Int64, _ step: Int64) -> Int64 {
            let q = time / step
            return (time % step < 0 ? q - 1 : q) * step
        }
    }
}
