#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open descriptors (`RLIMIT_NOFILE`). A broker holds one per
/// connection: Debian's default soft limit of 1,024 runs out long before its hard
/// limit, and once it has, `accept` fails with `EMFILE` for every client.
/// `hubcli serve` raises the soft limit to the hard one at start.
public enum OpenFileLimit {
    /// The soft and hard limits now (`nil` when they cannot be read).
    public static var current: (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit (at most `ceiling`); returns the soft limit
    /// before and after (equal when it could not be raised, or was already there).
    @discardableResult
    public static func raiseToHard(ceiling: UInt64 = 1 << 20) -> (before: UInt64, after: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        let before = UInt64(limit.rlim_cur)
        let target = min(UInt64(limit.rlim_max), ceiling)
        guard target > before else { return (before, before) }
        limit.rlim_cur = rlim_t(target)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (before, before) }
        return (before, current?.soft ?? before)
    }
}
