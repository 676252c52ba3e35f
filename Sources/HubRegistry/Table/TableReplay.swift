import HubEngine
import HubPipeline
import HubValue
import HubWire

extension Publishers {
    /// A subscription to a table subject: the table's snapshot, then its changes, with
    /// their offsets, within the subscriber's demand (PIPELINES.md, "Table subjects").
    ///
    /// - **Snapshot.** One change `{"key": K, "value": V}` per live key, in the order of
    ///   the offsets of the changes that set them (the table as of its latest offset L,
    ///   taken when the subscription starts). A subscriber that requested one gets one.
    /// - **Changes.** Once the snapshot is delivered, the changelog after L, replayed from
    ///   the history (``HistoryReplay``) and then live: what changed while the snapshot
    ///   was delivered is not missed. A subscriber so slow that the changelog no longer
    ///   holds L + 1 when it gets there fails with `overflow`, as a history replay does.
    /// - **`since`.** `{offset: O}` resumes the changes after O (no snapshot) when the
    ///   changelog still holds them (`recovered: true`); otherwise the snapshot comes
    ///   again, with `recovered: false`: the subscriber starts its table afresh. Because
    ///   the snapshot is in offset order, every change after the last offset a subscriber
    ///   saw, snapshot or not, is in the changelog after it. `{last: K}` gives the last K
    ///   changes, then the live ones, as for any subject with history.
    /// - **A changelog compacted per key** (``SubjectLog/compactsPerKey``: JetStream's) has
    ///   gaps where a key changed again; the changes after any offset of its epoch, gaps and
    ///   all, still hold each key's latest change after it, so a `since` of its epoch that
    ///   it reached is always recovered, and the changes after a snapshot always follow it.
    ///
    /// `onStart` hears, once and before any value, the epoch, the offset the
    /// subscription starts from (L for a snapshot) and whether a `since` was recovered.
    ///
    /// The snapshot (one reference per live key, at most the table's `maxKeys`) is
    /// counted in the subscriber's `memory` budget while it is being delivered: a budget
    /// without room for it fails the subscription with `limit_exceeded`.
    public struct TableReplay: Publisher {
        public typealias Output = HistoryEntry
        public typealias Failure = HubError

        let table: SubjectTable
        let history: SubjectHistory
        let since: HistorySince?
        let memory: ResourceBudget?
        /// The replay of the changelog after a position (its buffer, budget and pacing).
        let changes: (HistorySince, @escaping (HistoryPosition, Bool?) -> Void) -> HistoryReplay
        let onStart: (HistoryPosition, Bool?) -> Void

        /// A subscription to `table` (whose changelog is `history`) from `since`; `changes`
        /// makes the replay of the changelog from a position.
        public init(
            table: SubjectTable, history: SubjectHistory, since: HistorySince?, memory: ResourceBudget? = nil,
            changes: @escaping (HistorySince, @escaping (HistoryPosition, Bool?) -> Void) -> HistoryReplay,
            onStart: @escaping (HistoryPosition, Bool?) -> Void
        ) {
            self.table = table
            self.history = history
            self.since = since
            self.memory = memory
            self.changes = changes
            self.onStart = onStart
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == HistoryEntry, S.Failure == HubError {
            let inner = Inner(replay: self, downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start()
        }

        private final class Inner<Downstream: Subscriber>: Subscription
        where Downstream.Input == HistoryEntry, Downstream.Failure == HubError {
            private let replay: TableReplay
            private var downstream: Downstream?
            private var demand = Subscribers.Demand.none
            private var snapshot: [HistoryEntry] = []
            private var next = 0
            /// The offset the snapshot stands at (the changes go on after it).
            private var snapshotOffset: UInt64 = 0
            private var inSnapshot = false
            private var delivering = false
            private var leg: ChangesLeg?
            /// The snapshot's bytes in the subscriber's budget.
            private var lease: ResourceLease?

            init(replay: TableReplay, downstream: Downstream) {
                self.replay = replay
                self.downstream = downstream
            }

            func start() {
                guard downstream != nil else { return }
                switch replay.since {
                case nil:
                    beginSnapshot(recovered: nil)
                case let since?:
                    // The changes after the offset if the changelog still has them; if not,
                    // the snapshot again (the replay tells before it delivers anything).
                    followChanges(since: since, strict: false, assured: assured(since))
                }
            }

            private func beginSnapshot(recovered: Bool?) {
                snapshot = replay.table.snapshot()
                snapshotOffset = replay.history.lastOffset
                if let memory = replay.memory {
                    do throws(HubError) {
                        lease = try memory.lease(
                            bytes: snapshot.count * MemoryLayout<HistoryEntry>.stride,
                            for: "the snapshot of table '\(replay.table.name)' (\(snapshot.count) keys)")
                    } catch {
                        snapshot = []
                        fail(error)
                        return
                    }
                }
                next = 0
                inSnapshot = true
                replay.onStart(HistoryPosition(epoch: replay.history.epoch, offset: snapshotOffset), recovered)
                pump()
            }

            private func pump() {
                guard inSnapshot, !delivering else { return }
                delivering = true
                defer { delivering = false }
                while next < snapshot.count, demand > 0, let downstream {
                    let entry = snapshot[next]
                    next += 1
                    demand -= 1
                    demand += downstream.receive(entry)
                }
                guard downstream != nil, next >= snapshot.count else { return }
                inSnapshot = false
                snapshot = []
                lease.take()?.release()
                followChanges(since: .offset(snapshotOffset, epoch: replay.history.epoch), strict: true)
            }

            /// Whether the changes after `since` bring a table up to date whatever gaps the
            /// changelog has (a changelog compacted per key, and an offset of its epoch that
            /// it reached).
            private func assured(_ since: HistorySince) -> Bool {
                guard replay.history.log.compactsPerKey, case let .offset(offset, epoch) = since else { return false }
                return (epoch == nil || epoch == replay.history.epoch) && offset <= replay.history.lastOffset
            }

            /// Goes on with the changelog from `since`. `strict` (after a snapshot): the
            /// changes must all be there, else `overflow`; otherwise a `since` that is not
            /// recovered gives the snapshot again. `assured` (``assured(_:)``): the
            /// changes are taken as recovered whatever gaps they have.
            private func followChanges(since: HistorySince, strict: Bool, assured: Bool = false) {
                let leg = ChangesLeg(owner: self)
                self.leg = leg
                let publisher = replay.changes(since) { [weak self, weak leg] position, recovered in
                    guard let self, let leg, self.leg === leg else { return }
                    if strict {
                        guard recovered == true || self.replay.history.log.compactsPerKey else {
                            leg.abandon()
                            self.fail(HubError(
                                .overflow,
                                "the subscription fell behind the table's changelog: offset \(self.snapshotOffset + 1) is no longer kept",
                                data: ["offset": .int(Int64(self.snapshotOffset))]))
                            return
                        }
                        return
                    }
                    if case .offset = since, recovered != true, !assured {
                        leg.abandon()
                        self.leg = nil
                        // No change came before this answer: what was asked of the leg (a
                        // store that answers later has it already) goes to the snapshot.
                        self.demand += leg.forwarded
                        self.beginSnapshot(recovered: false)
                        return
                    }
                    self.replay.onStart(position, assured ? true : recovered)
                }
                publisher.receive(subscriber: leg)
                guard self.leg === leg else { return }
                if demand > 0 {
                    let pending = demand
                    demand = .none
                    leg.request(pending)
                }
            }

            fileprivate func fail(_ error: HubError) {
                guard let downstream else { return }
                self.downstream = nil
                snapshot = []
                lease.take()?.release()
                leg?.abandon()
                leg = nil
                downstream.receive(completion: .failure(error))
            }

            func request(_ demand: Subscribers.Demand) {
                guard downstream != nil, demand > 0 else { return }
                if !inSnapshot, let leg, leg.upstream != nil {
                    leg.request(demand)
                    return
                }
                self.demand += demand
                pump()
            }

            func cancel() {
                downstream = nil
                snapshot = []
                lease.take()?.release()
                leg?.abandon()
                leg = nil
            }

            /// The changes: the changelog's replay, passed on to the downstream.
            private final class ChangesLeg: Subscriber {
                typealias Input = HistoryEntry
                typealias Failure = HubError

                weak var owner: Inner?
                var upstream: (any Subscription)?
                private var abandoned = false
                /// The demand passed on to the replay.
                private(set) var forwarded = Subscribers.Demand.none

                init(owner: Inner) { self.owner = owner }

                func request(_ demand: Subscribers.Demand) {
                    forwarded += demand
                    upstream?.request(demand)
                }

                func abandon() {
                    abandoned = true
                    let upstream = self.upstream
                    self.upstream = nil
                    upstream?.cancel()
                }

                func receive(subscription: any Subscription) {
                    guard upstream == nil, !abandoned, owner?.downstream != nil else {
                        subscription.cancel()
                        return
                    }
                    upstream = subscription
                }

                func receive(_ input: HistoryEntry) -> Subscribers.Demand {
                    guard !abandoned, let downstream = owner?.downstream else { return .none }
                    return downstream.receive(input)
                }

                func receive(completion: Subscribers.Completion<HubError>) {
                    upstream = nil
                    guard !abandoned, let owner, let downstream = owner.downstream else { return }
                    owner.downstream = nil
                    downstream.receive(completion: completion)
                }
            }
        }
    }
}
