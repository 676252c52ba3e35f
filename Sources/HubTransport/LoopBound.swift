/// A value that may only be used on one event loop's thread, made `Sendable` so that it
/// can travel through other threads (as SwiftNIO's `NIOLoopBound`).
///
/// Creating it and reading or writing ``value`` trap off the loop thread.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop whose thread may use the value.
    public let eventLoop: EventLoop
    private var storage: Value

    /// Wraps `value`. Must be called on `eventLoop`'s thread.
    public init(_ value: Value, eventLoop: EventLoop) {
        eventLoop.preconditionInEventLoop()
        self.eventLoop = eventLoop
        self.storage = value
    }

    /// The wrapped value; loop thread only.
    public var value: Value {
        get {
            eventLoop.preconditionInEventLoop()
            return storage
        }
        set {
            eventLoop.preconditionInEventLoop()
            storage = newValue
        }
    }
}
