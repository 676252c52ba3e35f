/// Something that writes when an event loop writes what its connections queued
/// (``EventLoop/writeWithConnections(_:)``), held back with them while a stream's writes
/// wait (``WriteCoalescing``): a ``LoopHandOff`` carrying messages for another loop's
/// connections, so that a fan-out crosses to that loop once per write rather than once
/// per pass.
public protocol LoopWriter: AnyObject {
    /// The connections its next write is for, counted with the loop's own when the loop
    /// decides whether to wait.
    var pendingConnections: Int { get }
    /// Writes (or hands over) what it holds. Called on the loop's thread.
    func write()
}
