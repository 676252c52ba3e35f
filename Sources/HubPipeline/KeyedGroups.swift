import DequeModule
import HubEngine
import HubValue
import HubWire

/// `groupBy(key, pipeline, maxKeys: n, idle: d)`: one instance of `pipeline` (a chain of
/// operators) per distinct value of `key`, each fed the values of its key in order,
/// their outputs merged as `{"key": k, "value": v}`.
///
/// - **Demand.** As a one-for-one operator (`map`, `scan`): the downstream's requests
///   go upstream unchanged; a value whose group emits nothing at once gives back a
///   demand of one (as `filter`); a group's output that finds no demand (a group that
///   emits several values for one, or later, from a timer) waits in a buffer of
///   `bufferLimit` values, beyond which the pipeline fails with `overflow`. Each group's
///   pipeline is asked for `.unlimited`, and its input delivers within the demand that
///   pipeline asks for (what it does not ask for yet waits, within the same bound).
///   Combine has no such operator: `groupBy(k, scan(s, f))` behaves, value for value and
///   demand for demand, as a `scan` over a dictionary of accumulators by key that emits
///   `{key, value}` (KeyedPipelineTests checks it against that reference).
/// - **Bounded keys.** At most `maxKeys` groups live at once: a value of a new key when
///   that many live ends the group used least recently (its pipeline's input finishes:
///   a `reduce` emits its result then); with `idle`, a group that got no value for that
///   long ends the same way. A client that invents keys cannot grow memory without bound.
/// - **Ending.** A group whose pipeline finishes is forgotten (the next value of its key
///   starts a new one); one that fails fails the whole operator. When the upstream
///   finishes, every group's input finishes, and the operator finishes once every group
///   has and its buffer is delivered.
/// - **Checkpoints.** With a `state`, the live groups (their keys, the order of their
///   use, how long each has been idle, the values waiting for them), and the outputs
///   waiting for demand, are checkpointed; each group's pipeline is built in a scope of
///   its own (its number), so that its operators' states are checkpointed with it and a
///   restored group resumes them.
struct KeyedGroups: Publisher {
    typealias Output = Value
    typealias Failure = HubError

    let upstream: AnyPublisher<Value, HubError>
    /// The key of a value (an error fails the operator).
    let key: (Value) throws(HubError) -> Value
    /// Builds a group's pipeline over its input.
    let group: (AnyPublisher<Value, HubError>) -> AnyPublisher<Value, HubError>
    let maxKeys: Int
    let idle: Duration?
    let scheduler: any Scheduler
    let bufferLimit: Int
    let state: OperatorStateSlot?

    func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == HubError {
        let inner = Inner(downstream: subscriber, configuration: self)
        upstream.receive(subscriber: inner)
    }

    /// A group's output wrapped for the downstream.
    static func keyed(_ key: Value, _ value: Value) -> Value {
        .object(["key": key, "value": value])
    }

    final class Inner<Downstream: Subscriber>: Subscriber, Subscription
    where Downstream.Input == Value, Downstream.Failure == HubError {
        typealias Input = Value
        typealias Failure = HubError

        private var downstream: Downstream?
        private let configuration: KeyedGroups
        private var upstream: (any Subscription)?
        private var upstreamFinished = false
        private var demand = Subscribers.Demand.none
        /// Outputs that found no demand.
        private var buffered = Deque<Value>()
        private var delivering = false
        /// Outputs the value being routed produced (to give back a demand of one when none),
        /// and the demand the downstream answered them with (given back upstream).
        private var producedWhileRouting = 0
        private var returnedWhileRouting = Subscribers.Demand.none
        private var routing = false

        // The groups: a slab of live groups, found by key, in a list by last use.
        private var byKey: [Value: Int] = [:]
        private var slots: [Group?] = []
        private var freeSlots: [Int] = []
        /// The least and most recently used live groups.
        private var oldest: Int?
        private var newest: Int?
        private var nextID = 0
        private var sweep: (any Cancellable)?

        init(downstream: Downstream, configuration: KeyedGroups) {
            self.downstream = downstream
            self.configuration = configuration
        }

        // MARK: Upstream

        func receive(subscription: any Subscription) {
            guard upstream == nil, downstream != nil else {
                subscription.cancel()
                return
            }
            upstream = subscription
            if let slot = configuration.state { checkpoint(slot) }
            startSweep()
            downstream?.receive(subscription: self)
        }

        func receive(_ input: Value) -> Subscribers.Demand {
            guard downstream != nil, !upstreamFinished else { return .none }
            let key: Value
            do throws(HubError) {
                key = try configuration.key(input)
            } catch {
                fail(error)
                return .none
            }
            let index = byKey[key] ?? open(key, id: nil)
            guard let index, let group = slots[index] else { return .none }
            touch(index)
            producedWhileRouting = 0
            returnedWhileRouting = .none
            routing = true
            group.input.send(input)
            routing = false
            guard downstream != nil else { return .none }
            if let failure = group.input.overflowed {
                fail(failure)
                return .none
            }
            // The downstream's answers go upstream, as through `map`; a value that made its
            // group emit nothing now is replaced, as `filter` does.
            return returnedWhileRouting + (producedWhileRouting == 0 ? .max(1) : .none)
        }

        func receive(completion: Subscribers.Completion<HubError>) {
            guard downstream != nil, !upstreamFinished else { return }
            upstreamFinished = true
            upstream = nil
            switch completion {
            case .failure(let error):
                fail(error)
            case .finished:
                sweep.take()?.cancel()
                for index in slots.indices { slots[index]?.input.finish() }
                finishIfDone()
            }
        }

        // MARK: Downstream

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0, downstream != nil else { return }
            self.demand += demand
            let (delivered, answered) = drain()
            // What the buffer took is not asked of the upstream again.
            var wanted = demand + answered
            if delivered > 0, let max = wanted.max { wanted = .max(Swift.max(0, max - delivered)) }
            if wanted > 0 { upstream?.request(wanted) }
            finishIfDone()
        }

        func cancel() {
            guard downstream.take() != nil else { return }
            end()
            upstream.take()?.cancel()
        }

        // MARK: Groups

        private final class Group {
            let key: Value
            let id: Int
            let input: GroupInput
            var side: Side?
            var lastUsed: SchedulerTime
            var previous: Int?
            var next: Int?

            init(key: Value, id: Int, input: GroupInput, lastUsed: SchedulerTime) {
                self.key = key
                self.id = id
                self.input = input
                self.lastUsed = lastUsed
            }
        }

        /// Opens the group of `key` (number `id`, or the next), ending the least recently
        /// used one first when `maxKeys` are live. Returns its slot.
        @discardableResult
        private func open(_ key: Value, id: Int?, queued: [Value] = [], idleFor: Duration = .zero) -> Int? {
            if byKey.count >= configuration.maxKeys, let oldest { close(oldest) }
            let number = id ?? nextID
            nextID = Swift.max(nextID, number + 1)
            let input = GroupInput(limit: configuration.bufferLimit, queued: queued)
            let group = Group(key: key, id: number, input: input, lastUsed: configuration.scheduler.now.advanced(by: .zero - idleFor))
            let index: Int
            if let free = freeSlots.popLast() {
                index = free
                slots[index] = group
            } else {
                index = slots.count
                slots.append(group)
            }
            byKey[key] = index
            link(index)
            let built: AnyPublisher<Value, HubError>
            if let slot = configuration.state {
                built = slot.withScope(String(number)) { configuration.group(input.eraseToAnyPublisher()) }
            } else {
                built = configuration.group(input.eraseToAnyPublisher())
            }
            let side = Side(owner: self, index: index, key: key)
            group.side = side
            built.receive(subscriber: side)
            return slots[index] == nil ? nil : index
        }

        /// Ends the group in `index` as the bound or idleness ends it: its input finishes.
        private func close(_ index: Int) {
            guard let group = slots[index] else { return }
            forget(index)
            group.input.finish()
        }

        /// Takes the group in `index` out of the lookup and the list (its pipeline may still
        /// emit what its ending makes it emit: a `reduce`'s result).
        private func forget(_ index: Int) {
            guard let group = slots[index] else { return }
            if byKey[group.key] == index { byKey[group.key] = nil }
            unlink(index)
        }

        /// The group's pipeline ended.
        fileprivate func ended(_ index: Int, _ completion: Subscribers.Completion<HubError>) {
            guard let group = slots[index] else { return }
            forget(index)
            slots[index] = nil
            freeSlots.append(index)
            configuration.state?.dropScope(String(group.id))
            switch completion {
            case .finished: finishIfDone()
            case .failure(let error): fail(error)
            }
        }

        fileprivate func emitted(_ value: Value, by index: Int, key: Value) {
            guard downstream != nil else { return }
            if routing { producedWhileRouting += 1 }
            let output = KeyedGroups.keyed(key, value)
            if buffered.isEmpty, demand > 0, !delivering, let downstream {
                demand -= 1
                delivering = true
                let more = downstream.receive(output)
                delivering = false
                demand += more
                if more > 0 {
                    if routing { returnedWhileRouting += more } else { upstream?.request(more) }
                }
                return
            }
            guard buffered.count < configuration.bufferLimit else {
                fail(HubError(.overflow, "groupBy: \(configuration.bufferLimit) outputs wait for demand"))
                return
            }
            buffered.append(output)
        }

        /// Delivers buffered outputs within the demand; returns how many, and the demand
        /// the downstream answered them with.
        private func drain() -> (delivered: Int, answered: Subscribers.Demand) {
            guard !delivering else { return (0, .none) }
            var count = 0
            var answered = Subscribers.Demand.none
            delivering = true
            while demand > 0, let output = buffered.popFirst(), let downstream {
                demand -= 1
                count += 1
                let more = downstream.receive(output)
                demand += more
                answered += more
            }
            delivering = false
            return (count, answered)
        }

        private func finishIfDone() {
            guard upstreamFinished, byKey.isEmpty, slots.allSatisfy({ $0 == nil }), buffered.isEmpty,
                  let downstream = downstream.take() else { return }
            end()
            downstream.receive(completion: .finished)
        }

        private func fail(_ error: HubError) {
            guard let downstream = downstream.take() else { return }
            end()
            upstream.take()?.cancel()
            downstream.receive(completion: .failure(error))
        }

        /// Cancels every group and the sweep.
        private func end() {
            sweep.take()?.cancel()
            buffered.removeAll()
            let groups = slots
            slots = []
            byKey = [:]
            freeSlots = []
            oldest = nil
            newest = nil
            for group in groups.compactMap({ $0 }) {
                group.side?.cancel()
                configuration.state?.dropScope(String(group.id))
            }
        }

        // MARK: The list by last use

        private func link(_ index: Int) {
            guard let group = slots[index] else { return }
            group.previous = newest
            group.next = nil
            if let newest { slots[newest]?.next = index } else { oldest = index }
            newest = index
        }

        private func unlink(_ index: Int) {
            guard let group = slots[index] else { return }
            if let previous = group.previous { slots[previous]?.next = group.next } else if oldest == index { oldest = group.next }
            if let next = group.next { slots[next]?.previous = group.previous } else if newest == index { newest = group.previous }
            group.previous = nil
            group.next = nil
        }

        private func touch(_ index: Int) {
            guard let group = slots[index] else { return }
            // The time of last use matters to the idle sweep only: no clock read without it.
            if configuration.idle != nil { group.lastUsed = configuration.scheduler.now }
            guard newest != index else { return }
            unlink(index)
            link(index)
        }

        // MARK: Idleness

        private func startSweep() {
            guard let idle = configuration.idle, sweep == nil else { return }
            let scheduler = configuration.scheduler
            let every = Swift.max(idle / 2, .milliseconds(10))
            sweep = scheduler.schedule(after: scheduler.now.advanced(by: every), interval: every) { [weak self] in
                self?.expire(olderThan: idle)
            }
        }

        /// Ends the groups idle for `idle` or longer, oldest first.
        private func expire(olderThan idle: Duration) {
            let now = configuration.scheduler.now
            while let index = oldest, let group = slots[index], group.lastUsed.advanced(by: idle) <= now {
                close(index)
            }
        }

        // MARK: Checkpoint

        private func checkpoint(_ slot: OperatorStateSlot) {
            let state = OperatorState(slot: slot, codec: StateCodec<Value>.value)
            state.restore("groupBy") { snapshot throws(CheckpointError) in
                let next = try snapshot.int("next")
                guard case let .array(groups) = try snapshot.field("groups"), case let .array(outputs) = try snapshot.field("buffer") else {
                    throw CheckpointError(.malformed, "the state of 'groupBy' has no arrays 'groups' and 'buffer'")
                }
                var restored: [(id: Int, key: Value, idleFor: Duration, queued: [Value])] = []
                for group in groups {
                    guard let id = group["id"]?.intValue, let key = group["key"], let idleFor = group["idleFor"]?.intValue,
                          case let .array(queued)? = group["queued"] else {
                        throw CheckpointError(.malformed, "a group of 'groupBy' is not {id, key, idleFor, queued}")
                    }
                    restored.append((Int(id), key, .nanoseconds(Swift.max(0, idleFor)), queued))
                }
                buffered = Deque(outputs)
                // Oldest first: the list by last use comes back in the same order.
                for group in restored { open(group.key, id: group.id, queued: group.queued, idleFor: group.idleFor) }
                nextID = Swift.max(nextID, next)
            }
            state.attach("groupBy") { [weak self] in
                guard let self, self.downstream != nil else { return nil }
                let now = self.configuration.scheduler.now
                var groups: [Value] = []
                var cursor = self.oldest
                while let index = cursor, let group = self.slots[index] {
                    groups.append([
                        "id": .int(Int64(group.id)), "key": group.key,
                        "idleFor": .int(Swift.max(0, now.nanoseconds - group.lastUsed.nanoseconds)),
                        "queued": .array(group.input.queue),
                    ])
                    cursor = group.next
                }
                return ["next": .int(Int64(self.nextID)), "groups": .array(groups), "buffer": .array(Array(self.buffered))]
            }
        }

        /// The subscriber of one group's pipeline.
        private final class Side: Subscriber {
            typealias Input = Value
            typealias Failure = HubError

            private weak var owner: Inner?
            private let index: Int
            private let key: Value
            private var subscription: (any Subscription)?

            init(owner: Inner, index: Int, key: Value) {
                self.owner = owner
                self.index = index
                self.key = key
            }

            func receive(subscription: any Subscription) {
                guard owner != nil, self.subscription == nil else {
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                subscription.request(.unlimited)
            }

            func receive(_ input: Value) -> Subscribers.Demand {
                owner?.emitted(input, by: index, key: key)
                return .none
            }

            func receive(completion: Subscribers.Completion<HubError>) {
                subscription = nil
                owner?.ended(index, completion)
            }

            func cancel() {
                owner = nil
                subscription.take()?.cancel()
            }
        }
    }
}
