#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calendar clock a store stamps values with, for ``HistoryRetention/ttl``:
/// nanoseconds since the Unix epoch. Stores may call it on any thread.
public typealias HistoryClock = @Sendable () -> Int64

/// The system's calendar clock.
public let systemHistoryClock: HistoryClock = {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}
