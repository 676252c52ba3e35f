/// Keeps one repeated log line from flooding the log: the same line is let through at
/// most ``burst`` times a second; the rest of that second is counted and reported in one
/// summary line when the next second begins (or another line arrives). libwebsockets
/// logs `accept: errno 24` on every pass while the process is out of descriptors: tens
/// of thousands of lines a second without this.
struct LogLineThrottle {
    /// Lines of the same text let through per second.
    let burst: Int
    private var text: String?
    private var windowStart: Int64 = 0
    private var count = 0
    private var suppressed = 0

    init(burst: Int = 10) {
        self.burst = burst
    }

    /// Whether `line`, logged at `now` (nanoseconds, monotonic), goes out; `summary`, when
    /// set, says how many of the previous line were held back and goes out first.
    mutating func admit(_ line: String, now: Int64) -> (emit: Bool, summary: String?) {
        var summary: String?
        if line != text || now - windowStart >= 1_000_000_000 {
            if suppressed > 0, let text {
                summary = "(\(suppressed) more of: \(text))"
            }
            if line != text { self.text = line }
            windowStart = now
            count = 0
            suppressed = 0
        }
        count += 1
        guard count <= burst else {
            suppressed += 1
            return (false, summary)
        }
        return (true, summary)
    }
}
