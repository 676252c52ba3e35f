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

/// What pipelines see of the hub: its names as sources, its triggers.
extension Hub {
    /// A bare name in a pipeline: the subject (created if the hub auto-creates names) or
    /// trigger of that name, hot-buffered with the entry's default settings (a
    /// subscription's own settings come through ``compile(pipeline:bufferSize:overflow:)``).
    public func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        try source(named: name, bufferSize: nil, overflow: nil)
    }

    /// `trigger(name[, key])` in a pipeline: the trigger's activations (those with an equal
    /// key when `key` is given), hot-buffered with the default settings.
    public func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        try trigger(named: name, key: key, bufferSize: nil, overflow: nil, memory: nil)
    }

    /// A bare name's publisher, hot-buffered with `bufferSize` and `overflow` (or the entry's defaults).
    func source(
        named name: String, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        try bufferedPublisher(try resolve(name), bufferSize: bufferSize, overflow: overflow, memory: memory, origin: origin)
    }

    /// A trigger's publisher, hot-buffered with `bufferSize` and `overflow` (or the defaults).
    func trigger(
        named name: String, key: Value?, bufferSize: Int?, overflow: OverflowPolicy?, memory: ResourceBudget? = nil
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        triggerPublisher(
            try trigger(named: name), key: key, bufferSize: bufferSize, overflow: overflow, memory: memory, origin: origin)
    }
}
