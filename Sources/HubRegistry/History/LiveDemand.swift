/// How many values the live subscribers of a subject with history can take on this
/// hub now: what a store that brings values from elsewhere (a JetStream stream
/// written by other nodes) fetches within, so that a remote subscriber's demand
/// becomes back pressure on the fetching instead of an unbounded push.
///
/// Each live subscription's buffer (``Publishers/HotBuffer``) is a *meter*: what its
/// downstream has asked for and not received, less what it holds already. ``wanted``
/// is the largest of them, or unlimited while a live consumer without a meter is
/// attached (a shared pipeline's input, which takes whatever comes). A meter tells
/// ``rose()`` when its downstream asks for more, and the store hears it through
/// ``onRise``. Loop-confined.
public final class LiveDemand {
    private var meters: [ObjectIdentifier: () -> Int] = [:]
    private let attached: () -> Int

    /// Called on the loop when a subscriber asked for more values (set by the store).
    public var onRise: (() -> Void)?

    /// The demand of the consumers attached to a subject; `attached` counts them all,
    /// metered or not.
    init(attached: @escaping () -> Int) {
        self.attached = attached
    }

    /// The values the live subscribers can take now: the largest meter (`Int.max` for an
    /// unlimited one, or while an unmetered consumer is attached), 0 when none can.
    public var wanted: Int {
        if attached() > meters.count { return .max }
        var largest = 0
        for want in meters.values {
            largest = max(largest, want())
            if largest == .max { break }
        }
        return largest
    }

    /// Adds the meter `want` of the subscription `id`.
    func meter(_ id: ObjectIdentifier, _ want: @escaping () -> Int) {
        meters[id] = want
    }

    /// Removes the meter of the subscription `id` (it detached).
    func unmeter(_ id: ObjectIdentifier) {
        meters[id] = nil
    }

    /// A subscriber asked for more values.
    func rose() {
        onRise?()
    }
}
