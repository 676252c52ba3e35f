import CWebsockets
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// Routes libwebsockets' own log lines into swift-log (label `libwebsockets`).
///
/// Quiet by default: only lws errors are emitted until ``setLevels(_:)`` asks for more.
public enum LibWebSocketsLogging {
    /// The lws log classes to let through.
    public struct Levels: OptionSet, Sendable {
        /// The lws `LLL_*` bit mask.
        public var rawValue: Int32
        /// Wraps an lws bit mask.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `LLL_ERR`.
        public static let error = Levels(rawValue: Int32(cws_lll_err))
        /// `LLL_WARN`.
        public static let warning = Levels(rawValue: Int32(cws_lll_warn))
        /// `LLL_NOTICE`.
        public static let notice = Levels(rawValue: Int32(cws_lll_notice))
        /// `LLL_INFO`.
        public static let info = Levels(rawValue: Int32(cws_lll_info))
        /// `LLL_DEBUG` (only present in debug builds of lws).
        public static let debug = Levels(rawValue: Int32(cws_lll_debug))
        /// `LLL_USER`.
        public static let user = Levels(rawValue: Int32(cws_lll_user))
        /// The default: errors only.
        public static let quiet: Levels = [.error]
    }

    /// Sets which lws log classes are routed to swift-log. Process-wide, as in lws.
    public static func setLevels(_ levels: Levels) {
        lws_set_log_level(levels.rawValue, cwsEmitLogLine)
    }

    /// Installs the quiet default once, before the first context is created.
    static let installDefault: Void = {
        setLevels(.quiet)
    }()
}

private let lwsLogger = Logger(label: "libwebsockets")
/// One repeated line at most ten times a second (lws may log on every loop pass).
private let lwsThrottle = LockedState(LogLineThrottle())

/// lws's log emitter: a top-level non-capturing function, as lws calls it from its own thread.
private func cwsEmitLogLine(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    guard let line else { return }
    var text = String(cString: line)
    while text.last == "\n" { text.removeLast() }
    let swiftLevel: Logger.Level
    if level & Int32(cws_lll_err) != 0 {
        swiftLevel = .error
    } else if level & Int32(cws_lll_warn) != 0 {
        swiftLevel = .warning
    } else if level & Int32(cws_lll_notice) != 0 {
        swiftLevel = .notice
    } else if level & Int32(cws_lll_info) != 0 {
        swiftLevel = .info
    } else {
        swiftLevel = .debug
    }
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let (emit, summary) = lwsThrottle.withLock {
        $0.admit(text, now: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))
    }
    if let summary { lwsLogger.log(level: swiftLevel, "\(summary)") }
    if emit { lwsLogger.log(level: swiftLevel, "\(text)") }
}
