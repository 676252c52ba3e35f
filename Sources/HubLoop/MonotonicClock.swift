#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The monotonic clock the loops and what runs on them measure time with: nanoseconds
/// since an arbitrary start, never going back (`CLOCK_MONOTONIC`).
public enum MonotonicClock {
    /// Now, in nanoseconds.
    @inlinable
    public static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
