extension WebSocketConnection {
    /// Per-connection limits and write sizes.
    public struct Limits: Sendable {
        /// The largest inbound message accepted (bytes); larger ones close with 1009.
        public var maximumMessageSize: Int
        /// Messages at least this large are written as several fragments of this size.
        public var fragmentSize: Int
        /// The largest frame that coalescing appends grow to (bytes).
        public var maximumCoalescedFrameSize: Int
        /// Small messages are framed by the transport and handed to the socket in writes
        /// of at most this many bytes (0 disables).
        public var maximumBatchSize: Int
        /// The queued bytes at which a connection's writes stop waiting for the loop's
        /// write coalescing (``EventLoop/Configuration/writeCoalescingDelay``) and go out
        /// at the end of the pass: a bound on what a hold adds to a connection's queue,
        /// to keep below a slow-consumer limit on that queue.
        public var promptWriteSize: Int

        /// Creates limits; the defaults are 1 MiB messages, 64 KiB fragments, 64 KiB
        /// coalesced frames, 64 KiB write batches and writes that stop waiting at 64 KiB.
        public init(
            maximumMessageSize: Int = 1 << 20, fragmentSize: Int = 64 << 10,
            maximumCoalescedFrameSize: Int = 64 << 10, maximumBatchSize: Int = 64 << 10,
            promptWriteSize: Int = 64 << 10
        ) {
            self.maximumMessageSize = maximumMessageSize
            self.fragmentSize = min(max(fragmentSize, 1), 1 << 30)
            self.maximumCoalescedFrameSize = maximumCoalescedFrameSize
            self.maximumBatchSize = maximumBatchSize
            self.promptWriteSize = max(1, promptWriteSize)
        }
    }
}
