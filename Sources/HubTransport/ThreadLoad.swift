#if canImport(Glibc)
import Glibc
#endif

/// How busy the calling thread is: the share of wall-clock time it spent running or
/// waiting in the run queue to run (Linux's `/proc/thread-self/schedstat`), between two
/// samples. Waiting to run counts as busy, so a loop whose cores are taken by others is
/// not mistaken for an idle one. Made and used on one thread; costs one `pread` a sample.
final class ThreadLoad {
    private let descriptor: Int32
    private var mark: (wall: Int64, busy: Int64)?

    /// The calling thread's probe, or `nil` where the kernel does not report it.
    init?() {
        let descriptor = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// The share of the time since the previous sample (at `now`, monotonic ns) the thread
    /// was busy, 0 to 1; `nil` for the first sample or when it cannot be read.
    func sample(now: Int64) -> Double? {
        guard let busy = readBusy() else { return nil }
        defer { mark = (now, busy) }
        guard let mark, now > mark.wall else { return nil }
        return min(1, max(0, Double(busy - mark.busy) / Double(now - mark.wall)))
    }

    /// Nanoseconds on a CPU plus nanoseconds waiting for one, so far.
    private func readBusy() -> Int64? {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &buffer) { raw -> Int64? in
            let count = pread(descriptor, raw.baseAddress, raw.count, 0)
            guard count > 0 else { return nil }
            var fields: [Int64] = []
            var value: Int64 = 0
            var inNumber = false
            for byte in raw.prefix(count) {
                if byte >= 0x30, byte <= 0x39 {
                    value = value &* 10 &+ Int64(byte - 0x30)
                    inNumber = true
                } else if inNumber {
                    fields.append(value)
                    if fields.count == 2 { break }
                    value = 0
                    inNumber = false
                }
            }
            return fields.count == 2 ? fields[0] &+ fields[1] : nil
        }
    }
}
