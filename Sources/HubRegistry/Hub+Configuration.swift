import HeapModule
import HubEngine
import HubValue
import HubWire
import HubPipeline
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Hub {
    /// How a hub behaves where the protocol leaves a choice.
    public struct Configuration: Sendable {
        /// Whether unknown names are created on first use.
        public var autoCreate: Bool
        /// The buffer size of a hot subscription that asks for none.
        public var defaultBufferSize: Int
        /// The largest buffer a subscription may ask for.
        public var maxBufferSize: Int
        /// The overflow policy of a hot subscription that asks for none.
        public var defaultOverflow: OverflowPolicy
        /// The limits pipelines are compiled under.
        public var limits: PipelineLimits
        /// How many names get their own counters in the metrics (``HubMetrics``); later
        /// names share one.
        public var metricsNameCapacity: Int = 200
        /// The history of subjects created on first use (configuration `defaults.history`);
        /// `nil`: they keep none.
        public var defaultHistory: HistoryRetention?
        /// How long a subject created on first use may stay unused (no subscriber, nothing
        /// sent or resolved by name) before the hub forgets it (``sweepIdleNames()``, run
        /// by the service every `idleNameTimeout`: a name goes after between one and two
        /// of them); `nil`: never. Declared subjects, triggers and pipelines stay.
        public var idleNameTimeout: Duration? = .seconds(600)

        /// The defaults of PROTOCOL.md.
        public init(
            autoCreate: Bool = true,
            defaultBufferSize: Int = 1000,
            maxBufferSize: Int = 100_000,
            defaultOverflow: OverflowPolicy = .error,
            limits: PipelineLimits = PipelineLimits()
        ) {
            self.autoCreate = autoCreate
            self.defaultBufferSize = defaultBufferSize
            self.maxBufferSize = maxBufferSize
            self.defaultOverflow = defaultOverflow
            self.limits = limits
        }
    }
}
