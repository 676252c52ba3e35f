import Foundation
import HubValue
import Logging
import HubTransport

/// A swift-log `LogHandler` that writes one JSON object per line, for log shippers
/// (`hubcli serve --log-format json`):
///
/// ```json
/// {"time":"2026-11-23T21:39:10.123Z","level":"info","label":"hubcli.serve","message":"connection opened","source":"HubServer","path":"/","peer":"127.0.0.1","session":"8d6d…"}
/// ```
///
/// Metadata keys become fields (nested metadata as JSON objects and arrays); the fixed
/// fields win over metadata of the same name. Each line is written with one `write`
/// under a lock shared by every handler of the process, so lines never interleave.
///
/// No maintained JSON `LogHandler` is among the packages this project may use
/// (swift-log ships only `StreamLogHandler`; swift-otel exports to an OTLP collector),
/// hence this small one.
public struct JSONLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// The level below which messages are dropped.
    public var logLevel: Logger.Level
    /// The handler's own metadata, added to every line.
    public var metadata: Logger.Metadata = [:]
    /// Provides task-local metadata, if any.
    public var metadataProvider: Logger.MetadataProvider?
    private let descriptor: Int32

    private static let lock = LockedState(())

    /// A handler writing to standard error (`descriptor` 2) at `level` and above.
    public init(label: String, level: Logger.Level = .info, descriptor: Int32 = 2,
                metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.descriptor = descriptor
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: Value.Object = [:]
        fields["time"] = .string(JSONLogHandler.timestamp())
        fields["level"] = .string(event.level.rawValue)
        fields["label"] = .string(label)
        fields["message"] = .string(event.message.description)
        fields["source"] = .string(event.source)
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        for key in merged.keys.sorted() where fields[key] == nil {
            fields[key] = JSONLogHandler.value(merged[key]!)
        }
        if event.level >= .error {
            fields["file"] = .string(event.file)
            fields["line"] = .int(Int64(event.line))
        }
        var bytes = Value.object(fields).jsonBytes()
        bytes.append(UInt8(ascii: "\n"))
        JSONLogHandler.lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }

    /// Metadata as JSON.
    static func value(_ metadata: Logger.Metadata.Value) -> Value {
        switch metadata {
        case .string(let text): return .string(text)
        case .stringConvertible(let convertible): return .string(convertible.description)
        case .array(let items): return .array(items.map(value))
        case .dictionary(let entries):
            var object: Value.Object = [:]
            for key in entries.keys.sorted() { object[key] = value(entries[key]!) }
            return .object(object)
        }
    }

    /// Now in ISO 8601 UTC with milliseconds.
    static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var parts = tm()
        var seconds = time.tv_sec
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, time.tv_nsec / 1_000_000)
    }
}
