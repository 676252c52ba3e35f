/// Work one event loop hands to another, gathered during the source loop's pass (or
/// until it writes, ``init(from:to:carriesInput:handsOverWithWrites:)``) and handed over
/// in one batch: one lock and at most one wake-up of the destination per batch, however
/// many connections or messages it carries. This is how a broker
/// with several loops fans a value out across them, and how a connection on one loop
/// reaches its session on another.
///
/// Work runs on the destination in the order it was posted. A ``gather(_:)`` entry
/// keeps its place in that order but is evaluated only when the batch is handed over,
/// so that a connection can keep appending to one message batch for the whole pass.
///
/// Confined to the source loop; the work it carries runs on the destination loop and
/// must only touch what that loop owns. Work handed to a loop that has stopped is dropped.
public final class LoopHandOff {
    /// The loop that posts.
    public let source: EventLoop
    /// The loop the work runs on.
    public let destination: EventLoop

    private enum Entry {
        case work(() -> Void)
        case gather(() -> (() -> Void)?)
    }

    /// The work carried across: only the destination's thread runs it.
    private struct Batch: @unchecked Sendable {
        var work: [() -> Void]
    }

    private var entries: [Entry] = []
    /// Whether the work is input for the destination (see ``init(from:to:carriesInput:handsOverWithWrites:)``).
    private let carriesInput: Bool
    /// Whether the batch goes when the source loop writes, rather than at the end of its pass.
    private let handsOverWithWrites: Bool
    /// Whether the source loop will call ``write()`` at its next write.
    private var awaitsWrite = false
    /// Hand-overs so far (for tests and statistics).
    public private(set) var handOvers = 0

    /// A hand-off from `source` (whose thread must use it) to `destination`.
    ///
    /// - Parameter carriesInput: whether the work is input to the destination, which
    ///   more may follow at once (a client's messages), so that the destination's writes
    ///   may wait for it (``EventLoop/execute(_:)``); `false` for output to write at the
    ///   end of the destination's pass (messages for its connections,
    ///   ``EventLoop/executeAnswer(_:)``).
    /// - Parameter handsOverWithWrites: whether the batch goes when the source loop writes
    ///   its own connections' queues (``EventLoop/writeWithConnections(_:)``), held back
    ///   with them while a stream's writes wait, and each gathered entry counting as a
    ///   connection waiting to be written; `false` hands it over at the end of the pass.
    public init(from source: EventLoop, to destination: EventLoop, carriesInput: Bool = true, handsOverWithWrites: Bool = false) {
        self.source = source
        self.destination = destination
        self.carriesInput = carriesInput
        self.handsOverWithWrites = handsOverWithWrites
    }

    /// Runs `work` on the destination loop, after what was posted before it.
    public func post(_ work: @escaping () -> Void) {
        enqueue(.work(work))
    }

    /// Keeps a place in the order for work that `make` returns when the batch is handed
    /// over (on the source loop); `nil` hands nothing over.
    public func gather(_ make: @escaping () -> (() -> Void)?) {
        enqueue(.gather(make))
    }

    private func enqueue(_ entry: Entry) {
        assert(source.inEventLoop, "a loop hand-off was used off its source loop")
        if handsOverWithWrites {
            if !awaitsWrite {
                awaitsWrite = true
                source.writeWithConnections(self)
            }
        } else if entries.isEmpty {
            source.executeSoon { [self] in handOver() }
        }
        entries.append(entry)
    }

    /// Hands over what was posted so far now, without waiting for the end of the pass or
    /// the source loop's write (a connection's batch has grown large).
    public func handOverNow() {
        handOver()
    }

    private func handOver() {
        var batch = Batch(work: [])
        batch.work.reserveCapacity(entries.count)
        // Gatherers may post again (they run on the source loop): those entries wait for
        // the next hand-over, which `enqueue` schedules.
        let taken = entries
        entries = []
        for entry in taken {
            switch entry {
            case .work(let work): batch.work.append(work)
            case .gather(let make): if let work = make() { batch.work.append(work) }
            }
        }
        guard !batch.work.isEmpty else { return }
        handOvers += 1
        let carried = batch
        let run: @Sendable () -> Void = {
            for work in carried.work { work() }
        }
        if carriesInput { destination.execute(run) } else { destination.executeAnswer(run) }
    }
}

extension LoopHandOff: LoopWriter {
    /// The entries gathered for the next hand-over (a connection's messages, or a change).
    public var pendingConnections: Int { entries.count }

    /// Hands the batch over (the source loop writes).
    public func write() {
        awaitsWrite = false
        handOver()
    }
}
