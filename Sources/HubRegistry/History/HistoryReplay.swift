import HubEngine
import HubPipeline
import HubValue
import HubWire

extension Publishers {
    /// A subscription to a subject with history: its values with their offsets, starting
    /// where `since` says (PROTOCOL.md §10), replayed from the store within the
    /// subscriber's demand, then live, with no gap and no duplicate.
    ///
    /// - **Start.** Without `since`, the subscription is live from now (a current-value
    ///   subject's current value first). With `since`, it reads the first page of the
    ///   values asked for and tells `onStart` whether they were still in history
    ///   (`recovered`); if not, it goes on live from now. `onStart` runs once, before any
    ///   value, with the epoch and the subject's latest offset.
    /// - **Replay.** Pages are read from the subject's log only while the subscriber has
    ///   demand, each bounded by the demand, ``pageLimit`` values and ``pageBytes`` bytes,
    ///   one at a time, each only once the ``ReplayPacer`` lets it: memory holds one page.
    ///   A subscriber too slow for the history (the values it needs next have left it)
    ///   fails with `overflow`.
    /// - **Live.** Once the replay has delivered the subject's latest committed value, it
    ///   attaches to the subject's live values on the loop in the same turn, so the next
    ///   value committed is the next one delivered. From then on it is an ordinary hot
    ///   subscription, buffered with `capacity` and `policy` (PROTOCOL.md §5.7), within
    ///   the `memory` budget when one is given.
    public struct HistoryReplay: Publisher {
        public typealias Output = HistoryEntry
        public typealias Failure = HubError

        /// The most values one page holds.
        public static let pageLimit = 256
        /// The bytes (of stored JSON) after which a page ends.
        public static let pageBytes = 256 << 10

        let history: SubjectHistory
        let since: HistorySince?
        let capacity: Int
        let policy: OverflowPolicy
        let metrics: HubMetrics?
        let counters: NameCounters?
        let memory: ResourceBudget?
        let pacer: (any ReplayPacer)?
        let congestion: SubjectCongestion?
        let onStart: (HistoryPosition, Bool?) -> Void
        /// With an offset whose next values are no longer kept, replay from the oldest value
        /// kept after it (reported not recovered) rather than going on live.
        let lenient: Bool

        /// A subscription to `history` from `since`, buffered live with `capacity` and
        /// `policy` (congesting `congestion` when that is ``OverflowPolicy/block``), paced by
        /// `pacer`; `onStart` hears where it starts.
        public init(
            history: SubjectHistory, since: HistorySince?, capacity: Int, policy: OverflowPolicy,
            metrics: HubMetrics?, counters: NameCounters?, memory: ResourceBudget? = nil, pacer: (any ReplayPacer)?,
            congestion: SubjectCongestion? = nil, lenient: Bool = false, onStart: @escaping (HistoryPosition, Bool?) -> Void
        ) {
            self.history = history
            self.since = since
            self.capacity = capacity
            self.policy = policy
            self.metrics = metrics
            self.counters = counters
            self.memory = memory
            self.pacer = pacer
            self.congestion = congestion
            self.onStart = onStart
            self.lenient = lenient
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == HistoryEntry, S.Failure == HubError {
            let inner = Inner(replay: self, downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start()
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == HistoryEntry, Downstream.Failure == HubError {
            private let replay: HistoryReplay
            private var downstream: Downstream?
            private var demand = Subscribers.Demand.none
            /// The offset of the last value delivered (or skipped over by the start).
            private var cursor: UInt64 = 0
            private var started = false
            /// Whether the start is decided (``begin()`` ran): until then, demand only adds up.
            /// (A store shared with other hubs catches up before it, asynchronously: a request
            /// meanwhile must not read from before the `since`.)
            private var begun = false
            private var reading = false
            private var delivering = false
            /// Values of a page read beyond the demand (only the first page's, when it was
            /// read without demand to learn whether the history still had them).
            private var held: [HistoryEntry] = []
            private var live: LiveLeg?
            /// Whether it counts among the subject's subscribers as replaying.
            private var countedAsReplaying = false

            init(replay: HistoryReplay, downstream: Downstream) {
                self.replay = replay
                self.downstream = downstream
            }

            private var history: SubjectHistory { replay.history }

            func start() {
                guard downstream != nil, !started else { return }
                started = true
                countedAsReplaying = true
                history.replaying += 1
                // A store shared with other hubs first learns what they committed, so that
                // an offset read on another node is one this one knows too.
                history.log.catchUp { [weak self] in
                    guard let self, self.downstream != nil else { return }
                    self.begin()
                }
            }

            private func begin() {
                begun = true
                let last = history.lastOffset
                switch replay.since {
                case nil:
                    report(recovered: nil)
                    attachLive(fresh: true)
                case let .offset(offset, epoch)?:
                    if let epoch, epoch != history.epoch {
                        report(recovered: false)
                        attachLive(fresh: true)
                    } else if offset > last {
                        // An offset this epoch never reached: the client's history is not this one.
                        report(recovered: false)
                        attachLive(fresh: true)
                    } else {
                        cursor = offset
                        if offset == last {
                            report(recovered: true)
                            attachLive(fresh: false)
                        } else {
                            firstPage(strict: true)
                        }
                    }
                case let .last(count)?:
                    cursor = last > count ? last - count : 0
                    if cursor == last {
                        report(recovered: true)
                        attachLive(fresh: false)
                    } else {
                        firstPage(strict: false)
                    }
                }
            }

            /// Reads the first page, even without demand, to learn whether the values asked
            /// for are still in history. `strict` (an offset): they must start right after
            /// the cursor; otherwise (the last K) whatever is still kept is replayed.
            private func firstPage(strict: Bool) {
                let expected = cursor + 1
                read { [self] page in
                    guard let first = page.first else {
                        report(recovered: false)
                        attachLive(fresh: true)
                        return
                    }
                    if strict, first.offset != expected, !replay.lenient {
                        report(recovered: false)
                        attachLive(fresh: true)
                        return
                    }
                    cursor = first.offset - 1
                    report(recovered: first.offset == expected)
                    take(page)
                }
            }

            private func report(recovered: Bool?) {
                replay.onStart(HistoryPosition(epoch: history.epoch, offset: history.lastOffset), recovered)
            }

            /// Reads the next page (within the demand, at least one value) once the pacer lets it.
            private func read(_ handle: @escaping ([HistoryEntry]) -> Void) {
                reading = true
                let go = { [weak self] in
                    guard let self, self.downstream != nil else { return }
                    let limit = Swift.max(1, Swift.min(self.demand.max ?? HistoryReplay.pageLimit, HistoryReplay.pageLimit))
                    self.history.log.read(
                        after: self.cursor, through: self.history.lastOffset, limit: limit, maxBytes: HistoryReplay.pageBytes
                    ) { [weak self] result in
                        guard let self, self.downstream != nil else { return }
                        self.reading = false
                        switch result {
                        case let .success(page): handle(page)
                        case let .failure(error): self.fail(error)
                        }
                    }
                }
                if let pacer = replay.pacer { pacer.whenReady(go) } else { go() }
            }

            /// Delivers a page's values within the demand (keeping the rest), then goes on.
            private func take(_ page: [HistoryEntry]) {
                held.append(contentsOf: page)
                pump()
            }

            /// Delivers what is held, then reads on, or attaches to the live values once the
            /// cursor has reached the subject's latest committed value.
            private func pump() {
                guard started, begun, live == nil, !reading, !delivering else { return }
                delivering = true
                defer { delivering = false }
                while downstream != nil {
                    while !held.isEmpty, demand > 0, let downstream {
                        let entry = held.removeFirst()
                        // A changelog compacted per key has gaps where a key changed again.
                        guard entry.offset == cursor + 1 || (history.log.compactsPerKey && entry.offset > cursor) else {
                            fail(HubError(
                                .overflow,
                                "the subscription fell behind the subject's history: offset \(cursor + 1) is no longer kept",
                                data: ["offset": .int(Int64(cursor))]))
                            return
                        }
                        cursor = entry.offset
                        demand -= 1
                        demand += downstream.receive(entry)
                    }
                    guard held.isEmpty, downstream != nil else { return }
                    if cursor >= history.lastOffset {
                        delivering = false
                        attachLive(fresh: false)
                        return
                    }
                    guard demand > 0 else { return }
                    var answered = false
                    var pageRead: [HistoryEntry]?
                    read { [weak self] page in
                        guard let self else { return }
                        if page.isEmpty {
                            self.fail(HubError(
                                .overflow,
                                "the subscription fell behind the subject's history: offset \(self.cursor + 1) is no longer kept",
                                data: ["offset": .int(Int64(self.cursor))]))
                            return
                        }
                        if answered {
                            self.take(page)
                        } else {
                            pageRead = page
                        }
                    }
                    answered = true
                    // A store that answered at once (memory) continues this loop.
                    guard let page = pageRead else { return }
                    held.append(contentsOf: page)
                }
            }

            /// It no longer counts as replaying (attached live, failed or cancelled).
            private func stopCountingAsReplaying() {
                guard countedAsReplaying else { return }
                countedAsReplaying = false
                history.replaying -= 1
            }

            private func attachLive(fresh: Bool) {
                stopCountingAsReplaying()
                guard live == nil, downstream != nil else { return }
                let leg = LiveLeg(owner: self)
                live = leg
                let source = fresh ? history.entries : history.liveEntries
                Publishers.HotBuffer(
                    upstream: source, capacity: replay.capacity, policy: replay.policy, metrics: replay.metrics,
                    counters: replay.counters, memory: replay.memory,
                    weigh: replay.memory == nil ? nil : { $0.value.estimatedBytes }, liveDemand: history.liveDemand,
                    congestion: replay.congestion
                ).receive(subscriber: leg)
                if demand > 0 {
                    let pending = demand
                    demand = .none
                    leg.upstream?.request(pending)
                }
            }

            private func fail(_ error: HubError) {
                stopCountingAsReplaying()
                guard let downstream else { return }
                self.downstream = nil
                held = []
                live?.upstream.take()?.cancel()
                downstream.receive(completion: .failure(error))
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                if let live {
                    live.upstream?.request(demand)
                    return
                }
                self.demand += demand
                pump()
            }

            func cancel() {
                stopCountingAsReplaying()
                downstream = nil
                held = []
                live?.upstream.take()?.cancel()
            }

            /// The live part: the subject's hot-buffered values, passed on to the downstream.
            private final class LiveLeg: Subscriber {
                typealias Input = HistoryEntry
                typealias Failure = HubError

                weak var owner: Inner?
                var upstream: (any Subscription)?

                init(owner: Inner) { self.owner = owner }

                func receive(subscription: any Subscription) {
                    guard upstream == nil, owner?.downstream != nil else {
                        subscription.cancel()
                        return
                    }
                    upstream = subscription
                }

                func receive(_ input: HistoryEntry) -> Subscribers.Demand {
                    guard let downstream = owner?.downstream else { return .none }
                    return downstream.receive(input)
                }

                func receive(completion: Subscribers.Completion<HubError>) {
                    upstream = nil
                    guard let owner, let downstream = owner.downstream else { return }
                    owner.downstream = nil
                    downstream.receive(completion: completion)
                }
            }
        }
    }
}
