import CWebsockets
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
    lwsLogger.log(level: swiftLevel, "\(text)")
}
