import Foundation

extension EventLoop {
    /// How the loop's libwebsockets context is created.
    public struct Configuration: Sendable {
        /// The service thread's name (for debuggers and logs).
        public var name: String
        /// The size of lws's per-thread descriptor table; `0` uses the process's
        /// `RLIMIT_NOFILE` capped at 65,536.
        public var maximumFileDescriptors: Int
        /// Whether the loop's connections check that each inbound text message is valid
        /// UTF-8 when it is complete, and close with 1007 when it is not
        /// (``HubValue/UTF8Validation``, sixteen ASCII bytes at a step; lws's own option
        /// checks a byte at a time, and cost a twentieth of a broker's CPU with 1-KiB
        /// messages).
        public var validatesUTF8: Bool
        /// How long the loop may hold back writes while input keeps arriving, so that
        /// the messages of back-to-back inputs share one write per connection (at most
        /// 64 service passes; see ``WriteCoalescing``). Writes never wait once a pass
        /// brings no input, so a lone message is written at the end of its pass.
        /// `.zero` writes after every pass.
        public var writeCoalescingDelay: Duration
        /// How long a heavy stream's writes may be held back: while the connections
        /// waiting to be written get two messages or more each per
        /// ``writeCoalescingDelay`` (averaged over a few writes), the hold doubles, up to
        /// this (see ``WriteCoalescing``). A subscriber busy keeping up
        /// with a fan-out then reads many messages per wake-up. Not below
        /// ``writeCoalescingDelay``; equal to it keeps the delay fixed.
        public var writeCoalescingStreamingDelay: Duration
        /// How long a heavy stream's writes may be held back while the loop is mostly
        /// idle (see ``WriteCoalescing``): its spare CPU goes to latency. Between
        /// ``writeCoalescingDelay`` and ``writeCoalescingStreamingDelay`` (clamped).
        public var writeCoalescingIdleLoopDelay: Duration = .milliseconds(1)
        /// How the loop waits for its sockets.
        public var eventLibrary: EventLibrary
        /// Whether the loop measures the CPU time of each service pass (its thread's
        /// `CLOCK_THREAD_CPUTIME_ID`, read once per pass: a system call, so off by
        /// default) for ``EventLoop/takeLongestPassCPUTime()``. Unlike the wall-clock
        /// lag, the figure does not grow when other processes take the cores.
        public var measuresPassCPUTime = false

        /// How a loop waits for its sockets.
        public enum EventLibrary: String, Sendable, CaseIterable {
            /// libev (Debian's `libwebsockets-evlib-ev` plugin), on epoll on Linux: a
            /// wake-up costs the same however many connections are idle. When lws cannot
            /// load the plugin, the loop logs a warning and uses ``poll``.
            case libev
            /// lws's own `poll()`: every wake-up walks every descriptor (thousands of idle
            /// connections make each one slow).
            case poll
        }

        /// Creates a configuration.
        public init(
            name: String = "hub-event-loop", maximumFileDescriptors: Int = 0, validatesUTF8: Bool = true,
            writeCoalescingDelay: Duration = .microseconds(500),
            writeCoalescingStreamingDelay: Duration = .milliseconds(3), eventLibrary: EventLibrary = .libev
        ) {
            self.name = name
            self.maximumFileDescriptors = maximumFileDescriptors
            self.validatesUTF8 = validatesUTF8
            self.writeCoalescingDelay = writeCoalescingDelay
            self.writeCoalescingStreamingDelay = writeCoalescingStreamingDelay
            self.eventLibrary = eventLibrary
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

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
