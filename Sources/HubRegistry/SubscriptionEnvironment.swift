import HubEngine
import HubPipeline
import HubValue
import HubWire

/// What one subscription's pipeline is compiled against: the hub, with the
/// subscription's buffer settings for every hot source it names.
///
/// ``Hub/compile(pipeline:bufferSize:overflow:)`` makes one per compilation and
/// hands it to ``PipelineCompiler``; the pipeline keeps it for the nested
/// pipelines it builds later (`flatMap`, `switchToLatest`), so they get the same
/// settings. Confined to the hub's event loop.
final class SubscriptionEnvironment: PipelineEnvironment {
    private let hub: Hub
    /// The buffer of each hot source.
    let bufferSize: Int
    /// The overflow policy of each hot source, or `nil` for each entry's own.
    let overflow: OverflowPolicy?

    init(hub: Hub, bufferSize: Int, overflow: OverflowPolicy?) {
        self.hub = hub
        self.bufferSize = bufferSize
        self.overflow = overflow
    }

    func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        try hub.source(named: name, bufferSize: bufferSize, overflow: overflow)
    }

    func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        try hub.trigger(named: name, key: key, bufferSize: bufferSize, overflow: overflow)
    }

    var scheduler: any Scheduler { hub.scheduler }
    var limits: PipelineLimits { hub.limits }
    var wallClock: () -> SchedulerTime { hub.wallClock }
}
