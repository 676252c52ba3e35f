/// A value that belongs to one event loop, made `Sendable` so that it can travel through
/// other threads to that loop (as SwiftNIO's `NIOLoopBound`). It is the one confinement
/// wrapper of the package: the server's core, the client's core, hops of closures and
/// objects to a loop, a store's results carried back from its threads, and the tests'
/// handles on loop objects all use it.
///
/// It may be made on any thread, when the value is handed over: whoever makes it gives
/// the value up, and from then on only `eventLoop`'s thread uses it (a value made off
/// the loop reaches it through the loop's work queue, which orders that use after the
/// hand-over). Reading or writing ``value`` off the loop's thread traps in debug
/// builds; release builds skip the check, which sits on every hop.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop whose thread may use the value.
    public let eventLoop: any LoopExecutor
    @usableFromInline internal var storage: Value

    /// Hands `value` over to `eventLoop`: after this, only that loop's thread uses it.
    @inlinable
    public init(_ value: Value, eventLoop: any LoopExecutor) {
        self.eventLoop = eventLoop
        self.storage = value
    }

    /// The wrapped value; loop thread only (checked in debug builds).
    @inlinable
    public var value: Value {
        get {
            assert(eventLoop.inEventLoop, "a loop-bound value was used off its event loop")
            return storage
        }
        set {
            assert(eventLoop.inEventLoop, "a loop-bound value was used off its event loop")
            storage = newValue
        }
    }
}
