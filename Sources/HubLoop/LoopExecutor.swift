/// The thread a group of objects is confined to, and the way other threads hand work
/// to it: a hub's event loop, as the transport, the stores and the cluster see it.
///
/// The transport's `EventLoop` is one (an lws context serviced on its own thread); a
/// store's or a test's executor may be another. ``LoopBound`` checks its uses against
/// it.
public protocol LoopExecutor: Sendable {
    /// Whether the caller runs on the loop's thread.
    var inEventLoop: Bool { get }

    /// Runs `work` on the loop's thread, soon, in the order of the calls; callable from
    /// any thread.
    func execute(_ work: @Sendable @escaping () -> Void)
}

extension LoopExecutor {
    /// Traps unless called on the loop's thread.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "must be called on the event loop thread", file: file, line: line)
    }
}
