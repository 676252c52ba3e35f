import HubTransport

/// A loop-confined object made `Sendable` so that it can be handed to the loop:
/// ``value`` is only used on `eventLoop`'s thread (checked in debug builds).
struct LoopConfined<Wrapped: AnyObject>: @unchecked Sendable {
    let eventLoop: EventLoop
    private let wrapped: Wrapped

    /// Wraps `value`, made on any thread but used afterwards only on the loop.
    init(_ value: Wrapped, eventLoop: EventLoop) {
        self.wrapped = value
        self.eventLoop = eventLoop
    }

    /// The object; loop thread only.
    var value: Wrapped {
        assert(eventLoop.inEventLoop, "a HubClient object was used off its event loop")
        return wrapped
    }
}
