/// Paces a history replay by its consumer: the replay reads its next page only when the
/// consumer has room for it, so that a replay over a slow connection holds one page at
/// a time in memory instead of filling the connection's queue (a session lets the next
/// page go once its connection's queue is below a watermark). Loop-confined.
public protocol ReplayPacer: AnyObject {
    /// Runs `resume` now when the consumer can take more, or later, on the loop, once it can.
    func whenReady(_ resume: @escaping () -> Void)
}
