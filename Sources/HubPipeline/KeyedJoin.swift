import DequeModule
import HubEngine
import HubValue
import HubWire

/// `join(other, on: key, within: d)` and `lookup(other, on: key)`: the values of the upstream
/// (left) matched by key with those of another pipeline (right).
///
/// - **`join`** (stream with stream): each left value is paired with every right value of
///   the same key that came within `within` of it, before or after, and each right value
///   with every such left value; a pair is emitted as `[left, right]` when its second
///   value arrives, pairs of one value in the order their partners came. Time is arrival
///   time, or event time with `time: e` (milliseconds, taken from the values of both
///   sides; a value is then kept until the latest time seen has passed it by `within`).
///   Each side keeps at most `maxValues` values (the oldest go first).
/// - **`lookup`** (stream with table): the right pipeline is read as a table, the latest
///   value per key (a value whose `lookup` target is `null`, the table's `{"key": k,
///   "value": null}`, deletes its key); each left value emits `[left, latest]`, with
///   `null` when the table has nothing for its key. At most `maxValues` keys are kept
///   (the least recently written go first).
/// - **Demand** as `combineLatest`: both sides are read with `.unlimited` demand; results
///   that find no demand wait (at most `bufferLimit`, beyond which it fails with
///   `overflow`). It finishes when the left side has finished (and its results are
///   delivered); the right side finishing only freezes what it gave. A failure of either
///   side fails it.
/// - **Checkpoints.** With a `state`, the values kept on each side (`join`) or the table
///   (`lookup`), and the results waiting for demand, are checkpointed.
struct KeyedJoin: Publisher {
    typealias Output = Value
    typealias Failure = HubError

    enum Kind {
        case window(within: Int64)
        case table
    }

    let left: AnyPublisher<Value, HubError>
    let right: AnyPublisher<Value, HubError>
    let kind: Kind
    let leftKey: (Value) throws(HubError) -> Value
    let rightKey: (Value) throws(HubError) -> Value
    /// For a table: the value a right value stands for (`nil`: the value itself).
    let tableValue: ((Value) throws(HubError) -> Value)?
    let time: ((Value) throws(HubError) -> Value)?
    let maxValues: Int
    let wallClock: () -> SchedulerTime
    let bufferLimit: Int
    let state: OperatorStateSlot?

    func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
        let inner = Inner(downstream: subscriber, configuration: self)
        subscriber.receive(subscription: inner)
        inner.start()
    }

    /// One value kept on a side of a `join`.
    struct Kept {
        var time: Int64
        var value: Value
    }

    final class Inner<Downstream: Subscriber>: Subscription where Downstream.Input == Value, Downstream.Failure == HubError {
        private var downstream: Downstream?
        private let configuration: KeyedJoin
        private var subscriptions: [(any Subscription)?] = [nil, nil]
        private var finished = [false, false]
        private var demand = Subscribers.Demand.none
        private var buffered = Deque<Value>()
        private var delivering = false
        /// `join`: each side's kept values by key, and all of them in arrival order (to expire).
        private var sides: [[Value: Deque<Kept>]] = [[:], [:]]
        private var order: [Deque<(key: Value, time: Int64)>] = [[], []]
        private var latest: Int64?
        /// `lookup`: the table, and its keys by last write.
        private var table: [Value: (value: Value, written: UInt64)] = [:]
        private var writes = Deque<(key: Value, written: UInt64)>()
        private var written: UInt64 = 0

        init(downstream: Downstream, configuration: KeyedJoin) {
            self.downstream = downstream
            self.configuration = configuration
        }

        func start() {
            if let slot = configuration.state { checkpoint(slot) }
            // The right side first, so that a table already known is there for the left values.
            configuration.right.receive(subscriber: Side(owner: self, index: 1))
            guard downstream != nil else { return }
            configuration.left.receive(subscriber: Side(owner: self, index: 0))
        }

        // MARK: Sides

        fileprivate func subscribed(_ subscription: any Subscription, side: Int) {
            guard downstream != nil, subscriptions[side] == nil, !finished[side] else {
                subscription.cancel()
                return
            }
            subscriptions[side] = subscription
            subscription.request(.unlimited)
        }

        fileprivate func received(_ value: Value, side: Int) {
            guard downstream != nil, !finished[side] else { return }
            do throws(HubError) {
                switch configuration.kind {
                case let .window(within): try joined(value, side: side, within: within)
                case .table: try lookedUp(value, side: side)
                }
            } catch {
                fail(error)
            }
        }

        fileprivate func completed(_ completion: Subscribers.Completion<HubError>, side: Int) {
            guard downstream != nil, !finished[side] else { return }
            finished[side] = true
            subscriptions[side] = nil
            switch completion {
            case .failure(let error): fail(error)
            case .finished: finishIfDone()
            }
        }

        private func time(of value: Value) throws(HubError) -> Int64 {
            guard let timeOf = configuration.time else { return configuration.wallClock().nanoseconds / 1_000_000 }
            let stamp = try timeOf(value)
            guard let ms = stamp.numberAsDouble, ms.isFinite, abs(ms) < 9.2e18 else {
                throw HubError(.failed, "join: the time of a value must be a number of milliseconds, got \(ExpressionEvaluator.typeName(stamp))")
            }
            return Int64(ms.rounded(.down))
        }

        private func joined(_ value: Value, side: Int, within: Int64) throws(HubError) {
            let key = side == 0 ? try configuration.leftKey(value) : try configuration.rightKey(value)
            let time = try self.time(of: value)
            if time > latest ?? .min { latest = time }
            expire(before: (latest ?? time) - within)
            for partner in sides[1 - side][key] ?? [] where abs(partner.time - time) <= within {
                emit(side == 0 ? [value, partner.value] : [partner.value, value])
            }
            if let latest, time < latest - within { return }
            if order[side].count >= configuration.maxValues, let oldest = order[side].popFirst() {
                sides[side][oldest.key]?.removeFirst()
                if sides[side][oldest.key]?.isEmpty == true { sides[side][oldest.key] = nil }
            }
            sides[side][key, default: []].append(Kept(time: time, value: value))
            order[side].append((key, time))
        }

        /// Forgets the values kept from before `time`, oldest first (arrival order is time
        /// order in arrival time; in event time a value kept after a later one waits for it).
        private func expire(before time: Int64) {
            for side in 0...1 {
                while let first = order[side].first, first.time < time {
                    order[side].removeFirst()
                    if var kept = sides[side][first.key] {
                        if let index = kept.firstIndex(where: { $0.time == first.time }) { kept.remove(at: index) }
                        sides[side][first.key] = kept.isEmpty ? nil : kept
                    }
                }
            }
        }

        private func lookedUp(_ value: Value, side: Int) throws(HubError) {
            if side == 0 {
                let key = try configuration.leftKey(value)
                emit([value, table[key]?.value ?? .null])
                return
            }
            let key = try configuration.rightKey(value)
            let row = try configuration.tableValue?(value) ?? value
            guard !row.isNull else {
                table[key] = nil
                return
            }
            written += 1
            if table[key] == nil, table.count >= configuration.maxValues {
                // The least recently written key goes (entries of keys written again since are stale).
                while let oldest = writes.popFirst() {
                    if table[oldest.key]?.written == oldest.written {
                        table[oldest.key] = nil
                        break
                    }
                }
            }
            table[key] = (row, written)
            writes.append((key, written))
            if writes.count > 2 * Swift.max(configuration.maxValues, 16) {
                writes = Deque(writes.filter { table[$0.key]?.written == $0.written })
            }
        }

        // MARK: Results

        private func emit(_ pair: Value) {
            guard buffered.count < configuration.bufferLimit else {
                fail(HubError(.overflow, "join: \(configuration.bufferLimit) results wait for demand"))
                return
            }
            buffered.append(pair)
            drain()
        }

        private func drain() {
            guard !delivering else { return }
            delivering = true
            while demand > 0, let pair = buffered.popFirst(), let downstream {
                demand -= 1
                demand += downstream.receive(pair)
            }
            delivering = false
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0, downstream != nil else { return }
            self.demand += demand
            drain()
            finishIfDone()
        }

        func cancel() {
            guard downstream.take() != nil else { return }
            end()
        }

        private func finishIfDone() {
            guard finished[0], buffered.isEmpty, let downstream = downstream.take() else { return }
            end()
            downstream.receive(completion: .finished)
        }

        private func fail(_ error: HubError) {
            guard let downstream = downstream.take() else { return }
            end()
            downstream.receive(completion: .failure(error))
        }

        private func end() {
            let live = subscriptions
            subscriptions = [nil, nil]
            finished = [true, true]
            buffered.removeAll()
            sides = [[:], [:]]
            order = [[], []]
            table = [:]
            writes = []
            for subscription in live { subscription?.cancel() }
        }

        // MARK: Checkpoint

        private func checkpoint(_ slot: OperatorStateSlot) {
            let state = OperatorState(slot: slot, codec: StateCodec<Value>.value)
            state.restore("join") { snapshot throws(CheckpointError) in
                guard case let .array(outputs) = try snapshot.field("buffer") else {
                    throw CheckpointError(.malformed, "the state of a join has no array 'buffer'")
                }
                switch configuration.kind {
                case .window:
                    guard case let .array(kept) = try snapshot.field("kept") else {
                        throw CheckpointError(.malformed, "the state of join has no array 'kept'")
                    }
                    for item in kept {
                        guard case let .array(fields) = item, fields.count == 4, let side = fields[0].intValue, (0...1).contains(side),
                              let time = fields[2].intValue
                        else { throw CheckpointError(.malformed, "a value kept by join is not [side, key, time, value]") }
                        sides[Int(side)][fields[1], default: []].append(Kept(time: time, value: fields[3]))
                        order[Int(side)].append((fields[1], time))
                    }
                    latest = try snapshot.field("latest", StateCodec<Value>.value.optional).flatMap(\.intValue)
                case .table:
                    guard case let .array(rows) = try snapshot.field("table") else {
                        throw CheckpointError(.malformed, "the state of lookup has no array 'table'")
                    }
                    for row in rows {
                        guard case let .array(pair) = row, pair.count == 2 else {
                            throw CheckpointError(.malformed, "a row of lookup's table is not [key, value]")
                        }
                        written += 1
                        table[pair[0]] = (pair[1], written)
                        writes.append((pair[0], written))
                    }
                }
                buffered = Deque(outputs)
            }
            state.attach("join") { [weak self] in
                guard let self, self.downstream != nil else { return nil }
                var fields: Value.Object = ["buffer": .array(Array(self.buffered))]
                switch self.configuration.kind {
                case .window:
                    var kept: [Value] = []
                    for side in 0...1 {
                        // In arrival order: each key's values in the order they came.
                        var next: [Value: Int] = [:]
                        for entry in self.order[side] {
                            let index = next[entry.key, default: 0]
                            next[entry.key] = index + 1
                            guard let values = self.sides[side][entry.key], index < values.count else { continue }
                            kept.append([.int(Int64(side)), entry.key, .int(values[index].time), values[index].value])
                        }
                    }
                    fields["kept"] = .array(kept)
                    fields["latest"] = StateCodec<Value>.value.optional.encode(self.latest.map { .int($0) })
                case .table:
                    // In the order of their last writes: the oldest go first again when restored.
                    fields["table"] = .array(self.writes.compactMap { entry in
                        guard let row = self.table[entry.key], row.written == entry.written else { return nil }
                        return [entry.key, row.value]
                    })
                }
                return fields
            }
        }

        private struct Side: Subscriber {
            typealias Input = Value
            typealias Failure = HubError
            let owner: Inner
            let index: Int
            let combineIdentifier = CombineIdentifier()

            func receive(subscription: any Subscription) { owner.subscribed(subscription, side: index) }
            func receive(_ input: Value) -> Subscribers.Demand {
                owner.received(input, side: index)
                return .none
            }
            func receive(completion: Subscribers.Completion<HubError>) { owner.completed(completion, side: index) }
        }
    }
}
