import Foundation
import HubEngine
import HubValue
import HubWire
import HubRegistry
import Yams

/// A broker's configuration file (`hubcli serve --config hub.yml`): where it
/// listens, its limits and authentication, and the subjects, triggers and
/// named pipelines it declares. `examples/hub.yml` shows every key.
///
/// ```yaml
/// listen: {host: 127.0.0.1, port: 7420}
/// autoCreate: false
/// subjects:
///   prices: {kind: currentValue, initial: {AAPL: 0}, buffer: 100, overflow: latest}
/// triggers: [refresh]
/// pipelines:
///   bigOrders: {source: "orders | filter(.qty > 100)", shared: true}
/// ```
///
/// Parsing checks everything that can be checked without a hub: the YAML,
/// every key (unknown keys are errors that list the valid ones), types and
/// ranges, names, duplicate names across subjects, triggers and pipelines, and
/// the syntax and limits of every pipeline. ``declare(in:)`` then declares the
/// entries in a hub and compiles every pipeline against it (names it uses,
/// arguments). Every error is a ``ConfigurationError`` naming the file, line,
/// column and key path.
public struct BrokerConfiguration: Sendable {
    /// A subject the file declares.
    public struct Subject: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Passthrough or current-value.
        public var kind: HubSubject.Kind
        /// The initial value of a current-value subject (`null` when not given).
        public var initial: Value?
        /// The buffer its subscribers get unless they ask for another.
        public var buffer: Int?
        /// The overflow policy its subscribers get unless they ask for another.
        public var overflow: OverflowPolicy?
        /// Whether a subscriber joining the open connection first receives its latest value (shared only; default false).
        public var currentValue: Bool = false
        /// How much history it keeps (`history`), if any.
        public var history: HistoryRetention?
        /// Whether its history and current value survive restarts (`durable`, in `storage.path`).
        public var durable: Bool = false
        /// Where it is declared (its key).
        public var location: SourceSegment
        /// The JSON Schema every value sent to it must match (`schema`), if any.
        public var schema: JSONSchema? = nil
        /// A table subject's bounds (`kind: table`, `maxKeys`, `maxBytes`); `nil` for others.
        public var table: SubjectTable.Limits? = nil
    }

    /// What `kind` a subject may say it is.
    enum SubjectKindName: String, CaseIterable {
        case passthrough, currentValue, table
    }

    /// A trigger the file declares.
    public struct Trigger: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Where it is declared.
        public var location: SourceSegment
    }

    /// A named pipeline the file declares.
    public struct Pipeline: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Its pipeline text.
        public var source: String
        /// Whether its subscribers share one upstream subscription (default true).
        public var shared: Bool
        /// The buffer its subscribers get unless they ask for another.
        public var buffer: Int?
        /// The overflow policy its subscribers get unless they ask for another.
        public var overflow: OverflowPolicy?
        /// Whether a subscriber joining the open connection first receives its latest value (shared only; default false).
        public var currentValue: Bool = false
        /// Where it is declared (its key).
        public var location: SourceSegment
        /// The key path of its text (`pipelines.NAME.source`, or `pipelines.NAME` in the short form).
        public var sourcePath: String
        /// Where the runs of its text lie in the file, to place pipeline errors.
        public var sourceSegments: [SourceSegment]
        /// What a value that makes it fail does (`onError`, default `fail`).
        public var onError: PipelineFailurePolicy = .fail
        /// Whether the broker runs it from its start, without subscribers (`run`, default false).
        public var runs: Bool = false
        /// How a running pipeline checkpoints its state (`checkpoint`, `restartFrom`); `nil`:
        /// never (`checkpoint: false`). By default it does when the broker has a durable store.
        public var checkpoint: CheckpointPolicy? = .automatic
    }

    /// A position in the file; for a run of a pipeline's text, the run that
    /// starts at character `offset` of the text lies at `line`:`column`.
    public struct SourceSegment: Sendable, Hashable {
        /// The offset in the text (characters) where the run starts; 0 for a position.
        public var offset: Int
        /// The line in the file (1-based).
        public var line: Int
        /// The column in the file (1-based).
        public var column: Int

        /// A run starting at `offset` that lies at `line`:`column`.
        public init(offset: Int = 0, line: Int, column: Int) {
            self.offset = offset
            self.line = line
            self.column = column
        }
    }

    /// Which clients may subscribe to ad-hoc pipeline text.
    public enum AdHocPipelines: Sendable, Hashable {
        /// Every client (the default).
        case allowed
        /// No client: `forbidden`.
        case forbidden
        /// Only clients authenticated with one of these tokens.
        case tokens(Set<String>)
    }

    /// The file name errors carry.
    public var file: String
    /// The service's settings: listen address, hub behaviour, session limits and auth.
    public var service: HubService.Configuration
    /// Which clients may subscribe to ad-hoc pipelines.
    public var adHocPipelines: AdHocPipelines
    /// The subjects, in file order.
    public var subjects: [Subject]
    /// The triggers, in file order.
    public var triggers: [Trigger]
    /// The named pipelines, in file order.
    public var pipelines: [Pipeline]
    /// The cluster to join (`cluster`), if any: without it the broker runs alone.
    public var cluster: ClusterSettings?

    /// The defaults: what `hubcli serve` runs without a file.
    public init(file: String = "<defaults>") {
        self.file = file
        service = HubService.Configuration()
        service.eventLoops = HubService.Configuration.availableCores
        adHocPipelines = .allowed
        subjects = []
        triggers = []
        pipelines = []
    }

    /// The keys of the top level.
    public static let topLevelKeys = [
        "listen", "autoCreate", "limits", "auth", "allowAdHocPipelines", "storage", "defaults", "subjects", "triggers",
        "pipelines", "admin", "metrics", "drainGrace", "cluster", "http",
    ]
    /// The keys of `cluster`.
    public static let clusterKeys = ["nats", "node", "sendImmediately"]
    /// The keys of `admin`.
    public static let adminKeys = ["host", "port"]
    /// The keys of `metrics`.
    public static let metricsKeys = ["nameLabels", "statsInterval", "passCPU"]
    /// The keys of `defaults`.
    public static let defaultsKeys = ["history"]
    /// The keys of a `history` (a subject's, or `defaults.history`).
    public static let historyKeys = ["size", "ttl"]
    /// The keys of `listen`.
    public static let listenKeys = ["host", "port", "tls", "eventLoops", "maxWriteDelay"]
    /// The keys of `listen.tls`.
    public static let tlsKeys = ["certificate", "privateKey"]
    /// The keys of `limits`.
    public static let limitsKeys = [
        "maxMessageBytes", "maxConnections", "maxSubscriptionsPerConnection", "maxQueuedBytesPerConnection",
        "pipelines", "defaultBuffer", "maxBuffer", "perConnection", "perIdentity", "maxUnauthenticated",
        "maxPendingHandshakes", "idleNameTimeout",
    ]
    /// The keys of `limits.pipelines`.
    public static let pipelineLimitsKeys = [
        "maxSourceLength", "maxStages", "maxExpressionDepth", "minimumInterval", "maxValueDepth", "maxValueBytes",
        "maxCallDepth",
    ]
    /// The keys of `limits.perConnection`.
    public static let perConnectionKeys = [
        "stepsPerSecond", "burstSteps", "memoryBytes", "timers", "messagesPerSecond", "bytesPerSecond",
    ]
    /// The keys of `limits.perIdentity`.
    public static let perIdentityKeys = ["stepsPerSecond", "burstSteps", "memoryBytes", "timers", "connections"]
    /// The keys of a subject.
    public static let subjectKeys = [
        "kind", "initial", "buffer", "overflow", "schema", "history", "durable", "maxKeys", "maxBytes",
    ]
    /// The keys of a pipeline.
    public static let pipelineKeys = [
        "source", "shared", "currentValue", "buffer", "overflow", "run", "onError", "checkpoint", "restartFrom",
    ]
    /// The keys of a pipeline's `checkpoint`.
    public static let checkpointKeys = ["every", "interval"]

    // MARK: Loading

    /// Reads and parses the file at `path`; errors name it `path`. Its `storage` section,
    /// if any, is read by `storage` (HubSQLite's `SQLiteStorage` in `hubcli`); without
    /// one, a `storage` section is an error.
    public static func load(
        contentsOf path: String, storage: (any DurableStorageKind.Type)? = nil
    ) throws(ConfigurationError) -> BrokerConfiguration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError(file: path, line: 1, column: 1, path: "", message: "cannot read the file: \(error.localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(file: path, line: 1, column: 1, path: "", message: "the file is not UTF-8 text")
        }
        return try parse(yaml: text, file: path, storage: storage)
    }

    /// Parses `yaml`; errors name it `file`. Its `storage` section, if any, is read by
    /// `storage`; without one, a `storage` section is an error.
    public static func parse(
        yaml: String, file: String = "hub.yml", storage: (any DurableStorageKind.Type)? = nil
    ) throws(ConfigurationError) -> BrokerConfiguration {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw ConfigurationError(yaml: error, file: file)
        } catch {
            throw ConfigurationError(file: file, line: 1, column: 1, path: "", message: "invalid YAML: \(error)")
        }
        var configuration = BrokerConfiguration(file: file)
        guard let root else { return configuration }
        let reader = ConfigurationReader(file: file, text: yaml)
        try configuration.read(root, reader, storageKind: storage)
        return configuration
    }

    // MARK: Applying

    /// Declares the subjects, triggers and pipelines in `hub`, then compiles
    /// every pipeline once against it (without subscribing), so that a name
    /// it uses that does not resolve, a cycle between pipelines, or an
    /// argument that does not evaluate is reported at the pipeline's position.
    /// With `autoCreate`, compiling creates the subjects the pipelines use.
    public func declare(in hub: Hub) throws(ConfigurationError) {
        for subject in subjects {
            do {
                try declare(subject, in: hub)
            } catch {
                throw ConfigurationError(file: file, at: subject.location, path: "subjects.\(subject.name)", message: error.message)
            }
        }
        for trigger in triggers {
            do {
                try hub.declareTrigger(trigger.name)
            } catch {
                throw ConfigurationError(file: file, at: trigger.location, path: "triggers", message: error.message)
            }
        }
        var declared: [(Pipeline, NamedPipeline)] = []
        for pipeline in pipelines {
            do {
                declared.append((pipeline, try declare(pipeline, in: hub)))
            } catch {
                throw pipelineError(error, pipeline)
            }
        }
        for (pipeline, named) in declared {
            do {
                try named.check(in: hub)
            } catch {
                throw pipelineError(error, pipeline)
            }
        }
    }

    /// Declares `subject` in `hub` with its settings and schema.
    @discardableResult
    func declare(_ subject: Subject, in hub: Hub) throws(HubError) -> HubSubject {
        try hub.declareSubject(
            subject.name, initialValue: subject.kind == .currentValue ? (subject.initial ?? .null) : Value?.none,
            bufferSize: subject.buffer, overflow: subject.overflow, schema: subject.schema,
            history: subject.history, durable: subject.durable, table: subject.table)
    }

    /// Declares `pipeline` in `hub` with its settings, failure policy, whether it runs, and
    /// where its text lies in this file (for the positions of its run-time failures).
    @discardableResult
    func declare(_ pipeline: Pipeline, in hub: Hub) throws(HubError) -> NamedPipeline {
        let (file, text, segments) = (self.file, pipeline.source, pipeline.sourceSegments)
        return try hub.declarePipeline(
            pipeline.name, source: pipeline.source, shared: pipeline.shared,
            bufferSize: pipeline.buffer, overflow: pipeline.overflow, currentValue: pipeline.currentValue,
            onError: pipeline.onError, runs: pipeline.runs, checkpoint: pipeline.checkpoint,
            locate: { line, column in
                BrokerConfiguration.locate(line: line, column: column, in: text, segments: segments)
                    .map { "\(file):\($0.line):\($0.column)" }
            })
    }

    /// Validates everything, as `hubcli serve --check-config` does: declares
    /// the entries in a scratch hub with this configuration and compiles every pipeline.
    public func check() throws(ConfigurationError) {
        // Durable subjects are checked against a store in memory: checking touches no disk.
        try declare(in: Hub(
            configuration: service.hub, scheduler: ImmediateScheduler.shared,
            durableStore: service.storage == nil ? nil : MemoryStore()))
    }

    /// Applies ``adHocPipelines`` to session settings.
    static func apply(_ adHoc: AdHocPipelines, to session: inout SessionConfiguration) {
        switch adHoc {
        case .allowed:
            session.allowsPipelines = true
            session.pipelineTokens = nil
        case .forbidden:
            session.allowsPipelines = false
            session.pipelineTokens = nil
        case .tokens(let tokens):
            session.allowsPipelines = true
            session.pipelineTokens = tokens
        }
    }

    /// A hub error about `pipeline`, placed in the file: at the position the
    /// error's `line`/`column` data point to in the pipeline's text, or at the text.
    func pipelineError(_ error: HubError, _ pipeline: Pipeline) -> ConfigurationError {
        let path = pipeline.sourcePath
        guard error.code == .pipelineError,
              let line = error.data?["line"]?.intValue, let column = error.data?["column"]?.intValue else {
            let at = pipeline.sourceSegments.first ?? pipeline.location
            return ConfigurationError(file: file, at: at, path: path, message: error.message)
        }
        // The message starts with "L:C: " (the position in the text): the file position replaces it.
        var message = error.message
        let prefix = "\(line):\(column): "
        if message.hasPrefix(prefix) { message.removeFirst(prefix.count) }
        let at = BrokerConfiguration.locate(line: Int(line), column: Int(column), in: pipeline.source, segments: pipeline.sourceSegments)
            ?? pipeline.location
        return ConfigurationError(file: file, at: at, path: path, message: "pipeline error: \(message)")
    }

    /// The file position of `line`:`column` of `text`, whose runs lie at `segments`.
    static func locate(line: Int, column: Int, in text: String, segments: [SourceSegment]) -> SourceSegment? {
        guard !segments.isEmpty else { return nil }
        var offset = 0
        for (index, textLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if index + 1 == line { break }
            offset += textLine.unicodeScalars.count + 1
        }
        offset += column - 1
        guard let segment = segments.last(where: { $0.offset <= offset }) else { return segments.first }
        return SourceSegment(offset: offset, line: segment.line, column: segment.column + offset - segment.offset)
    }
}
