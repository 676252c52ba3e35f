import HubRegistry
import HubTransport

/// The service loop's queue as a store's way back: a durable store's threads hand
/// their results to the hub's loop through it, as answers (their acks and values are
/// written at the end of the pass, not held back for write coalescing).
public struct LoopStoreExecutor: StoreExecutor {
    /// The loop.
    public let eventLoop: EventLoop

    /// A way back to `eventLoop`.
    public init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Whether the caller runs on the loop's thread.
    public var inEventLoop: Bool { eventLoop.inEventLoop }

    /// Runs `work` on the loop, as an answer.
    public func execute(_ work: @Sendable @escaping () -> Void) {
        eventLoop.executeAnswer(work)
    }

    /// On the loop: runs `work` after the events of the current pass.
    public func executeSoon(_ work: @Sendable @escaping () -> Void) {
        eventLoop.executeSoon(work)
    }

    /// On the loop: runs `work` at the end of the current pass, before its writes.
    public func executeAtEndOfPass(_ work: @Sendable @escaping () -> Void) {
        eventLoop.executeAtEndOfPass(work)
    }

    /// On the loop: what was queued is written at the end of this pass.
    public func answered() {
        eventLoop.writeAtEndOfPass()
    }
}
