#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock nanoseconds taken by `body`, from the monotonic clock.
func measure(_ body: () -> Void) -> Double {
    var start = timespec(), end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    body()
    clock_gettime(CLOCK_MONOTONIC, &end)
    return Double(end.tv_sec - start.tv_sec) * 1e9 + Double(end.tv_nsec - start.tv_nsec)
}

/// The median of `values` (which must not be empty).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// A number with two decimals.
func format(_ value: Double) -> String {
    let scaled = (value * 100).rounded() / 100
    return String(scaled)
}

/// Never true at run time; the optimiser cannot know that, so results passed
/// to ``blackhole(_:)`` must be computed.
nonisolated(unsafe) var blackholeEnabled = CommandLine.arguments.count > 99

/// Keeps a benchmark result alive so that the optimiser cannot drop the work that made it.
@inline(never)
func blackhole<T>(_ value: T) {
    if blackholeEnabled { print(value) }
}

/// Unbuffered writes to a file descriptor (for usage messages on standard error).
struct FileDescriptorOutput {
    let descriptor: Int32
    static let standardError = FileDescriptorOutput(descriptor: 2)

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }
}
