import CStackBounds

/// How much of the current thread's stack is left: what a pipeline that nests at run time
/// (a named pipeline calling itself, `page(.next)`) checks before going one level deeper,
/// since each level adds its operators' frames to its subscription and to every value's
/// path through it.
public enum StackSpace {
    /// The bytes of stack left below the caller's frame and the thread's whole stack size,
    /// or `nil` when the thread's bounds cannot be read.
    public static func current() -> (remaining: Int, size: Int)? {
        var lowest: UnsafeMutableRawPointer?
        var size = 0
        guard hub_current_stack_bounds(&lowest, &size) == 0, let lowest else { return nil }
        let here = Int(bitPattern: UInt(bitPattern: hub_current_stack_position()))
        // The stack grows down from lowest + size towards lowest.
        return (here - Int(bitPattern: UInt(bitPattern: lowest)), size)
    }

    /// Whether going one level deeper is safe: what is left is more than one and a half
    /// times what is used (and at least 256 KiB). A value emitted at the deepest level
    /// travels back up through every level, on top of the frames of the subscription that
    /// got there: a broker's loop thread (8 MiB) measured about 16 KiB a level to subscribe
    /// and 6 KiB a level for a value (`just(.) | flatMap(count(. + 1) | prepend(.))`, debug
    /// build), and crashed near 390 levels without this check.
    public static func allowsNesting() -> Bool {
        guard let (remaining, size) = current() else { return true }
        let used = size - remaining
        return remaining > Swift.max(used + used / 2, 256 << 10)
    }
}
