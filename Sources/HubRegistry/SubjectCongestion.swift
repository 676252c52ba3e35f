/// Whether a subject whose overflow policy is ``OverflowPolicy/block`` has a subscriber
/// whose buffer is full, and who waits for it to drain.
///
/// A subscription's buffer (``Publishers/HotBuffer``) *congests* the subject when it
/// holds its capacity of values and *relieves* it once it is down to half: the
/// publishers the broker can slow down (the connections that send to the subject)
/// stop being read while any buffer congests it, and read on when the last one has
/// relieved it (``whenRelieved(_:)``). A publisher that has waited too long ends the
/// subscriptions that keep the subject congested (``failCongesting()``): one stuck
/// subscriber cannot stop a subject's publishers for longer than that. Loop-confined.
public final class SubjectCongestion {
    /// The full buffers, each with what ends its subscription.
    private var congested: [ObjectIdentifier: () -> Void] = [:]
    private var waiters: [() -> Void] = []

    /// A congestion with no full buffer.
    public init() {}

    /// Whether a subscriber's buffer is full.
    public var isCongested: Bool { !congested.isEmpty }

    /// Runs `resume` once no buffer is full (now, when none is).
    public func whenRelieved(_ resume: @escaping () -> Void) {
        if congested.isEmpty {
            resume()
        } else {
            waiters.append(resume)
        }
    }

    /// Ends every subscription whose buffer is full (with `overflow`): a publisher
    /// waited for them longer than it may.
    public func failCongesting() {
        for end in Array(congested.values) { end() }
    }

    /// The buffer `id` is full; `end` ends its subscription.
    func congest(_ id: ObjectIdentifier, end: @escaping () -> Void) {
        congested[id] = end
    }

    /// The buffer `id` drained (or ended).
    func relieve(_ id: ObjectIdentifier) {
        guard congested.removeValue(forKey: id) != nil, congested.isEmpty, !waiters.isEmpty else { return }
        let waiting = waiters
        waiters = []
        for resume in waiting { resume() }
    }
}
