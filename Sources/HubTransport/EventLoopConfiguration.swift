import Foundation

extension EventLoop {
    /// How the loop's libwebsockets context is created.
    public struct Configuration: Sendable {
        /// The service thread's name (for debuggers and logs).
        public var name: String
        /// The size of lws's per-thread descriptor table; `0` uses the process's
        /// `RLIMIT_NOFILE` capped at 65,536.
        public var maximumFileDescriptors: Int
        /// Whether lws checks that inbound text messages are valid UTF-8 and closes with
        /// 1007 when they are not (an lws context option, so it holds for every endpoint).
        public var validatesUTF8: Bool

        /// Creates a configuration.
        public init(name: String = "hub-event-loop", maximumFileDescriptors: Int = 0, validatesUTF8: Bool = true) {
            self.name = name
            self.maximumFileDescriptors = maximumFileDescriptors
            self.validatesUTF8 = validatesUTF8
        }

        /// The descriptor table size to give lws.
        var descriptorLimit: Int {
            if maximumFileDescriptors > 0 { return maximumFileDescriptors }
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
                return Int(min(limit.rlim_cur, 65_536))
            }
            return 65_536
        }
    }
}
