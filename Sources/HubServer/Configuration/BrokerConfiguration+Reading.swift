import Foundation
import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import HubTransport
import Yams

extension BrokerConfiguration {
    /// Reads the document `root` into this configuration (which holds the defaults).
    /// A `storage` section is read by `storageKind`, and refused without one.
    mutating func read(
        _ root: Node, _ reader: ConfigurationReader, storageKind: (any DurableStorageKind.Type)?
    ) throws(ConfigurationError) {
        if case .scalar = root, !reader.isNull(root) {
            throw reader.error(root, "", "expected a mapping of \(BrokerConfiguration.topLevelKeys.joined(separator: ", ")) (got \(reader.describe(root)))")
        }
        let top = try reader.fields(root, "", allowed: BrokerConfiguration.topLevelKeys)

        if let listen = top["listen"] {
            let fields = try reader.fields(listen.value, listen.path, allowed: BrokerConfiguration.listenKeys)
            if let host = fields["host"] {
                let text = try reader.string(host.value, host.path)
                guard !text.isEmpty else { throw reader.error(host.value, host.path, "expected a host name or address (got an empty string)") }
                service.host = text
            }
            if let port = fields["port"] { service.port = try reader.int(port.value, port.path, in: 0...65535) }
            if let tls = fields["tls"] { try readTLS(tls, reader) }
            if let loops = fields["eventLoops"] {
                if case .scalar(let scalar) = loops.value, scalar.string == "auto" {
                    service.eventLoops = HubService.Configuration.availableCores
                } else {
                    let range = HubService.Configuration.eventLoopRange
                    do {
                        service.eventLoops = try reader.int(loops.value, loops.path, in: range)
                    } catch {
                        throw reader.error(
                            loops.value, loops.path,
                            "expected \"auto\" or an integer between \(range.lowerBound) and \(range.upperBound) (got \(reader.describe(loops.value)))")
                    }
                }
            }
            if let delay = fields["maxWriteDelay"] {
                let value = try reader.duration(delay.value, delay.path)
                let range = HubService.Configuration.maximumWriteDelayRange
                guard range.contains(value) else {
                    throw reader.error(delay.value, delay.path, "expected a duration of at most 1s (got \(reader.describe(delay.value)))")
                }
                service.maximumWriteDelay = value
            }
        }
        if let admin = top["admin"] {
            let fields = try reader.fields(admin.value, admin.path, allowed: BrokerConfiguration.adminKeys)
            var listener = HubService.Configuration.AdminListener(host: "127.0.0.1", port: 7421)
            if let host = fields["host"] {
                let text = try reader.string(host.value, host.path)
                guard !text.isEmpty else { throw reader.error(host.value, host.path, "expected a host name or address (got an empty string)") }
                listener.host = text
            }
            if let port = fields["port"] { listener.port = try reader.int(port.value, port.path, in: 0...65535) }
            service.admin = listener
        }
        if let metrics = top["metrics"] {
            let fields = try reader.fields(metrics.value, metrics.path, allowed: BrokerConfiguration.metricsKeys)
            if let field = fields["nameLabels"] {
                service.hub.metricsNameCapacity = try reader.int(field.value, field.path, in: 0...100_000)
            }
            if let field = fields["statsInterval"] {
                service.statsInterval = try reader.duration(field.value, field.path, minimum: .milliseconds(100))
            }
            if let field = fields["passCPU"] {
                service.measuresPassCPUTime = try reader.bool(field.value, field.path)
            }
        }
        if let http = top["http"] { try readHTTP(http, reader) }
        if let grace = top["drainGrace"] {
            service.drainGrace = try reader.duration(grace.value, grace.path)
        }
        if let autoCreate = top["autoCreate"] {
            service.hub.autoCreate = try reader.bool(autoCreate.value, autoCreate.path)
        }
        if let limits = top["limits"] { try readLimits(limits, reader) }
        if let auth = top["auth"] { try readAuth(auth, reader) }
        if let adHoc = top["allowAdHocPipelines"] { try readAdHoc(adHoc, reader) }
        if let storage = top["storage"] { try readStorage(storage, reader, kind: storageKind) }
        if let cluster = top["cluster"] { try readCluster(cluster, reader) }
        if let defaults = top["defaults"] {
            let fields = try reader.fields(defaults.value, defaults.path, allowed: BrokerConfiguration.defaultsKeys)
            if let history = fields["history"] { service.hub.defaultHistory = try readHistory(history, reader) }
        }
        BrokerConfiguration.apply(adHocPipelines, to: &service.session)

        var names: [String: (kind: String, at: Node)] = [:]
        func claim(_ name: String, kind: String, at node: Node, _ path: String) throws(ConfigurationError) {
            if let first = names[name] {
                throw reader.error(node, path, "'\(name)' is already declared as a \(first.kind) (at \(reader.position(first.at)))")
            }
            names[name] = (kind, node)
        }
        if let section = top["subjects"] {
            for entry in try reader.entries(section.value, section.path) {
                let name = try reader.name(entry.key, at: entry.keyNode, entry.path)
                try claim(name, kind: "subject", at: entry.keyNode, entry.path)
                subjects.append(try readSubject(name, entry, reader))
            }
        }
        if let section = top["triggers"] {
            for item in try reader.items(section.value, section.path) {
                let name = try reader.name(try reader.string(item.node, item.path), at: item.node, item.path)
                try claim(name, kind: "trigger", at: item.node, item.path)
                triggers.append(Trigger(name: name, location: BrokerConfiguration.position(item.node)))
            }
        }
        if let section = top["pipelines"] {
            for entry in try reader.entries(section.value, section.path) {
                let name = try reader.name(entry.key, at: entry.keyNode, entry.path)
                try claim(name, kind: "pipeline", at: entry.keyNode, entry.path)
                pipelines.append(try readPipeline(name, entry, reader))
            }
        }
    }

    /// `cluster: {nats: [URL, ...] or "URL,URL", node: NAME}`: each URL `nats://HOST:PORT`
    /// (the error points at the offending one), the node name letters, digits, `_-.`.
    private mutating func readCluster(_ cluster: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        let fields = try reader.fields(cluster.value, cluster.path, allowed: BrokerConfiguration.clusterKeys)
        guard let nats = fields["nats"] else {
            throw reader.error(cluster.value, cluster.path, "missing 'nats' (the NATS server URLs, nats://HOST:PORT)")
        }
        var urls: [String] = []
        if case .scalar = nats.value {
            let text = try reader.string(nats.value, nats.path)
            switch ClusterSettings.parseURLList(text) {
            case .success(let parsed): urls = parsed
            case .failure(let problem): throw reader.error(nats.value, nats.path, problem.message)
            }
        } else {
            for item in try reader.items(nats.value, nats.path) {
                let text = try reader.string(item.node, item.path)
                if let problem = ClusterSettings.problem(withURL: text) { throw reader.error(item.node, item.path, problem) }
                urls.append(text)
            }
            guard !urls.isEmpty else {
                throw reader.error(nats.value, nats.path, "expected at least one NATS URL (nats://HOST:PORT)")
            }
        }
        var settings = ClusterSettings(urls: urls)
        if let node = fields["node"] {
            let name = try reader.string(node.value, node.path)
            if let problem = ClusterSettings.problem(withNodeName: name) { throw reader.error(node.value, node.path, problem) }
            settings.node = name
        }
        if let field = fields["sendImmediately"] { settings.sendImmediately = try reader.bool(field.value, field.path) }
        self.cluster = settings
    }

    /// `listen.tls`: both files required and readable (relative paths are taken from
    /// the configuration file's directory).
    private mutating func readTLS(_ tls: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        let fields = try reader.fields(tls.value, tls.path, allowed: BrokerConfiguration.tlsKeys)
        func readFile(_ key: String, _ role: String) throws(ConfigurationError) -> String {
            guard let entry = fields[key] else {
                throw reader.error(tls.value, tls.path, "missing '\(key)' (the PEM \(role) file)")
            }
            let text = try reader.string(entry.value, entry.path)
            guard !text.isEmpty else {
                throw reader.error(entry.value, entry.path, "expected the path of the PEM \(role) file (got an empty string)")
            }
            let path = BrokerConfiguration.resolve(text, relativeTo: self.file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw reader.error(entry.value, entry.path, "the \(role) file '\(path)' does not exist")
            }
            guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: path) else {
                throw reader.error(entry.value, entry.path, "the \(role) file '\(path)' is not a readable file")
            }
            return path
        }
        let certificate = try readFile("certificate", "certificate")
        let privateKey = try readFile("privateKey", "private key")
        service.tls = TLSConfiguration(certificatePath: certificate, privateKeyPath: privateKey)
    }

    /// `path` as is when absolute, else relative to the directory of `configurationFile`.
    static func resolve(_ path: String, relativeTo configurationFile: String) -> String {
        guard !path.hasPrefix("/"), let slash = configurationFile.lastIndex(of: "/") else { return path }
        return String(configurationFile[...slash]) + path
    }

    private mutating func readLimits(_ limits: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        let fields = try reader.fields(limits.value, limits.path, allowed: BrokerConfiguration.limitsKeys)
        let positive = 1...Int.max
        if let field = fields["maxMessageBytes"] { service.maxMessageSize = try reader.int(field.value, field.path, in: positive) }
        if let field = fields["maxConnections"] { service.maxConnections = try reader.int(field.value, field.path, in: positive) }
        if let field = fields["maxSubscriptionsPerConnection"] {
            service.session.maxSubscriptions = try reader.int(field.value, field.path, in: positive)
        }
        if let field = fields["maxQueuedBytesPerConnection"] {
            service.session.maxQueuedBytes = try reader.int(field.value, field.path, in: positive)
        }
        if let field = fields["maxBuffer"] { service.hub.maxBufferSize = try reader.int(field.value, field.path, in: positive) }
        if let field = fields["defaultBuffer"] {
            service.hub.defaultBufferSize = try reader.int(field.value, field.path, in: 1...service.hub.maxBufferSize)
        } else {
            service.hub.defaultBufferSize = Swift.min(service.hub.defaultBufferSize, service.hub.maxBufferSize)
        }
        if let pipelines = fields["pipelines"] {
            let fields = try reader.fields(pipelines.value, pipelines.path, allowed: BrokerConfiguration.pipelineLimitsKeys)
            var bounds = service.hub.limits
            if let field = fields["maxSourceLength"] { bounds.maxSourceLength = try reader.int(field.value, field.path, in: positive) }
            if let field = fields["maxStages"] { bounds.maxStages = try reader.int(field.value, field.path, in: positive) }
            if let field = fields["maxExpressionDepth"] { bounds.maxExpressionDepth = try reader.int(field.value, field.path, in: positive) }
            if let field = fields["minimumInterval"] { bounds.minimumInterval = try reader.duration(field.value, field.path) }
            if let field = fields["maxValueDepth"] { bounds.maxValueDepth = try reader.int(field.value, field.path, in: 1...4096) }
            if let field = fields["maxValueBytes"] { bounds.maxValueBytes = try reader.int(field.value, field.path, in: positive) }
            if let field = fields["maxCallDepth"] { bounds.maxCallDepth = try reader.int(field.value, field.path, in: positive) }
            service.hub.limits = bounds
        }
        if let perConnection = fields["perConnection"] {
            service.session.connectionBudget = try readBudget(
                perConnection, BrokerConfiguration.perConnectionKeys, service.session.connectionBudget, reader)
            let rates = try reader.fields(perConnection.value, perConnection.path, allowed: BrokerConfiguration.perConnectionKeys)
            if let field = rates["messagesPerSecond"] {
                service.session.inboundRate.messagesPerSecond = try reader.int(field.value, field.path, in: positive)
            }
            if let field = rates["bytesPerSecond"] {
                service.session.inboundRate.bytesPerSecond = try reader.int(field.value, field.path, in: positive)
            }
        }
        if let perIdentity = fields["perIdentity"] {
            service.session.identityBudget = try readBudget(
                perIdentity, BrokerConfiguration.perIdentityKeys, service.session.identityBudget, reader)
            let connections = try reader.fields(perIdentity.value, perIdentity.path, allowed: BrokerConfiguration.perIdentityKeys)
            if let field = connections["connections"] {
                service.session.maxConnectionsPerIdentity = try reader.int(field.value, field.path, in: positive)
            }
        }
        if let field = fields["idleNameTimeout"] {
            service.hub.idleNameTimeout = try reader.duration(field.value, field.path, minimum: .milliseconds(1))
        }
        if let field = fields["maxUnauthenticated"] {
            service.maxUnauthenticated = try reader.int(field.value, field.path, in: positive)
        }
        if let field = fields["maxPendingHandshakes"] {
            service.maxPendingHandshakes = try reader.int(field.value, field.path, in: positive)
        }
    }

    /// A budget's bounds (`limits.perConnection`, `limits.perIdentity`) over `defaults`.
    func readBudget(
        _ entry: ConfigurationReader.Entry, _ keys: [String], _ defaults: ResourceBudget.Limits, _ reader: ConfigurationReader
    ) throws(ConfigurationError) -> ResourceBudget.Limits {
        let fields = try reader.fields(entry.value, entry.path, allowed: keys)
        let positive = 1...Int.max
        var limits = defaults
        if let field = fields["stepsPerSecond"] {
            limits.stepsPerSecond = try reader.int(field.value, field.path, in: positive)
            if fields["burstSteps"] == nil { limits.burst = Swift.max(limits.burst, limits.stepsPerSecond) }
        }
        if let field = fields["burstSteps"] { limits.burst = try reader.int(field.value, field.path, in: positive) }
        if let field = fields["memoryBytes"] { limits.maxBytes = try reader.int(field.value, field.path, in: positive) }
        if let field = fields["timers"] { limits.maxTimers = try reader.int(field.value, field.path, in: 0...Int.max) }
        return limits
    }

    private mutating func readAdHoc(_ adHoc: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        if case .sequence = adHoc.value {
            var tokens = Set<String>()
            for item in try reader.items(adHoc.value, adHoc.path) {
                let token = try reader.string(item.node, item.path)
                guard let known = service.session.tokens, known.contains(token) else {
                    throw reader.error(item.node, item.path, "'\(token)' is not one of auth.tokens")
                }
                tokens.insert(token)
            }
            adHocPipelines = .tokens(tokens)
            return
        }
        guard case .scalar(let scalar) = adHoc.value, case .bool(let allowed) = reader.resolve(scalar) else {
            throw reader.error(adHoc.value, adHoc.path, "expected true, false or a sequence of tokens from auth.tokens (got \(reader.describe(adHoc.value)))")
        }
        adHocPipelines = allowed ? .allowed : .forbidden
    }

    /// `storage`: the directory of the durable store (relative paths are taken from the
    /// configuration file's directory) and the store's own settings, which `kind` reads
    /// (HubSQLite's `SQLiteStorage`: its sync policy and whether other processes may open it).
    private mutating func readStorage(
        _ storage: ConfigurationReader.Entry, _ reader: ConfigurationReader, kind: (any DurableStorageKind.Type)?
    ) throws(ConfigurationError) {
        guard let kind else {
            throw reader.error(storage.keyNode, storage.path, "this broker has no durable store to configure")
        }
        let fields = try reader.fields(storage.value, storage.path, allowed: kind.settingKeys)
        guard let pathField = fields["path"] else {
            throw reader.error(storage.value, storage.path, "missing 'path' (the directory of the durable store)")
        }
        let text = try reader.string(pathField.value, pathField.path)
        guard !text.isEmpty else {
            throw reader.error(pathField.value, pathField.path, "expected the directory of the durable store (got an empty string)")
        }
        let path = BrokerConfiguration.resolve(text, relativeTo: self.file)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw reader.error(pathField.value, pathField.path, "'\(path)' is a file, not a directory")
        }
        var values: [String: StorageSettings.Scalar] = [:]
        for (key, field) in fields where key != "path" { values[key] = reader.storageScalar(field.value) }
        do {
            service.storage = try kind.storage(from: StorageSettings(path: path, values: values))
        } catch {
            let field = fields[error.key]
            throw reader.error(field?.value ?? storage.value, field?.path ?? storage.path, error.message)
        }
    }

    /// A `history`: `{size: N, ttl: "10m"}`, either bound optional (size defaults to
    /// ``HistoryRetention/defaultSize``).
    private func readHistory(_ history: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) -> HistoryRetention {
        var retention = HistoryRetention()
        if reader.isNull(history.value) { return retention }
        let fields = try reader.fields(history.value, history.path, allowed: BrokerConfiguration.historyKeys)
        if let field = fields["size"] { retention.size = try reader.int(field.value, field.path, in: 1...100_000_000) }
        if let field = fields["ttl"] { retention.ttl = try reader.duration(field.value, field.path, minimum: .milliseconds(1)) }
        return retention
    }

    private func readSubject(_ name: String, _ entry: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) -> Subject {
        let fields = try reader.fields(entry.value, entry.path, allowed: BrokerConfiguration.subjectKeys)
        var initial: Value?
        if let field = fields["initial"] { initial = try reader.value(field.value, field.path) }
        var kind: HubSubject.Kind = initial == nil ? .passthrough : .currentValue
        var isTable = false
        if let field = fields["kind"] {
            let named = try reader.choice(field.value, field.path, BrokerConfiguration.SubjectKindName.allCases)
            isTable = named == .table
            kind = named == .currentValue ? .currentValue : .passthrough
            if kind == .passthrough, let initialField = fields["initial"] {
                let what = isTable ? "a table subject has no initial value (its snapshot is its keys)"
                    : "a passthrough subject has no initial value (use kind: currentValue)"
                throw reader.error(initialField.keyNode, initialField.path, what)
            }
        }
        for bound in ["maxKeys", "maxBytes"] where !isTable {
            if let field = fields[bound] {
                throw reader.error(field.keyNode, field.path, "\(bound) bounds a table subject (kind: table)")
            }
        }
        var subject = Subject(
            name: name, kind: kind, initial: kind == .currentValue ? (initial ?? .null) : Value?.none,
            buffer: try buffer(fields, reader), overflow: try overflow(fields, reader, choices: OverflowPolicy.allCases),
            location: BrokerConfiguration.position(entry.keyNode))
        if let field = fields["schema"] {
            let document = try reader.value(field.value, field.path)
            do throws(JSONSchema.DefinitionError) {
                subject.schema = try JSONSchema(document)
            } catch {
                // At the offending keyword in the file, with its path in the schema.
                let (node, path) = reader.locate(error.path, in: field.value, under: field.path)
                throw reader.error(node, path, "invalid schema: \(error.message)")
            }
            if let value = subject.initial, kind == .currentValue, let problem = subject.schema?.validate(value) {
                let at = fields["initial"]
                throw reader.error(at?.value ?? entry.keyNode, at?.path ?? entry.path,
                                   "the initial value does not match the schema: \(problem.path): \(problem.message)")
            }
        }
        if isTable {
            var limits = SubjectTable.Limits()
            if let field = fields["maxKeys"] { limits.maxKeys = try reader.int(field.value, field.path, in: 1...10_000_000) }
            if let field = fields["maxBytes"] { limits.maxBytes = try reader.int(field.value, field.path, in: 1...(1 << 40)) }
            subject.table = limits
        }
        if let field = fields["history"] { subject.history = try readHistory(field, reader) }
        if let field = fields["durable"] {
            subject.durable = try reader.bool(field.value, field.path)
            if subject.durable, service.storage == nil {
                throw reader.error(field.value, field.path, "a durable subject needs storage.path (where the broker stores it)")
            }
        }
        return subject
    }

    private func readPipeline(_ name: String, _ entry: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) -> Pipeline {
        let sourceNode: Node
        let sourcePath: String
        var fields: [String: ConfigurationReader.Entry] = [:]
        if case .scalar = entry.value, !reader.isNull(entry.value) {
            // The short form: `name: "pipeline text"`.
            sourceNode = entry.value
            sourcePath = entry.path
        } else {
            fields = try reader.fields(entry.value, entry.path, allowed: BrokerConfiguration.pipelineKeys)
            guard let source = fields["source"] else {
                throw reader.error(entry.keyNode, entry.path, "missing key 'source' (the pipeline text)")
            }
            sourceNode = source.value
            sourcePath = source.path
        }
        let source = try reader.string(sourceNode, sourcePath)
        var pipeline = Pipeline(
            name: name, source: source,
            shared: try fields["shared"].map { field throws(ConfigurationError) in try reader.bool(field.value, field.path) } ?? true,
            buffer: try buffer(fields, reader), overflow: try overflow(fields, reader),
            location: BrokerConfiguration.position(entry.keyNode),
            sourcePath: sourcePath, sourceSegments: reader.segments(of: sourceNode))
        if pipeline.sourceSegments.isEmpty { pipeline.sourceSegments = [BrokerConfiguration.position(sourceNode)] }
        if let field = fields["run"] { pipeline.runs = try reader.bool(field.value, field.path) }
        if let field = fields["onError"] { pipeline.onError = try reader.choice(field.value, field.path, PipelineFailurePolicy.allCases) }
        try readCheckpoint(fields, into: &pipeline, reader)
        if let field = fields["currentValue"] {
            pipeline.currentValue = try reader.bool(field.value, field.path)
            guard !pipeline.currentValue || pipeline.shared else {
                throw reader.error(field.value, field.path, "currentValue needs a shared pipeline (shared: true)")
            }
        }
        do {
            _ = try PipelineCompiler.parse(source, limits: service.hub.limits)
        } catch {
            throw pipelineError(error, pipeline)
        }
        return pipeline
    }

    /// A running pipeline's `checkpoint` (`false`, `true`, or `{every: N, interval: D}`) and
    /// `restartFrom`. Given only `every`, the interval stays 1 s; given only `interval`,
    /// there is no bound by count.
    private func readCheckpoint(
        _ fields: [String: ConfigurationReader.Entry], into pipeline: inout Pipeline, _ reader: ConfigurationReader
    ) throws(ConfigurationError) {
        let checkpointField = fields["checkpoint"]
        let restartField = fields["restartFrom"]
        for field in [checkpointField, restartField].compactMap({ $0 }) where !pipeline.runs {
            throw reader.error(field.keyNode, field.path, "\(field.path.split(separator: ".").last ?? "") applies to a running pipeline (run: true)")
        }
        if let field = checkpointField {
            if case .scalar = field.value {
                pipeline.checkpoint = try reader.bool(field.value, field.path) ? CheckpointPolicy() : nil
            } else {
                let settings = try reader.fields(field.value, field.path, allowed: BrokerConfiguration.checkpointKeys)
                var policy = CheckpointPolicy()
                let every = try settings["every"].map { entry throws(ConfigurationError) in
                    try reader.int(entry.value, entry.path, in: 1...100_000_000)
                }
                let interval = try settings["interval"].map { entry throws(ConfigurationError) in
                    try reader.duration(entry.value, entry.path, minimum: .milliseconds(1))
                }
                switch (every, interval) {
                case (nil, nil): break
                case let (count?, nil): policy.every = count
                case let (nil, time?): policy.every = nil; policy.interval = time
                case let (count?, time?): policy.every = count; policy.interval = time
                }
                pipeline.checkpoint = policy
            }
        }
        if let field = restartField {
            guard pipeline.checkpoint != nil else {
                throw reader.error(field.keyNode, field.path, "restartFrom needs checkpoints (this pipeline has checkpoint: false)")
            }
            pipeline.checkpoint?.restartFrom = try reader.choice(field.value, field.path, CheckpointPolicy.RestartPosition.allCases)
        }
    }

    private func buffer(_ fields: [String: ConfigurationReader.Entry], _ reader: ConfigurationReader) throws(ConfigurationError) -> Int? {
        guard let field = fields["buffer"] else { return nil }
        return try reader.int(field.value, field.path, in: 1...service.hub.maxBufferSize)
    }

    /// An `overflow` among `choices`: a subject's may be `block` (it slows its publishers
    /// down); a pipeline's is one a subscriber could ask for.
    private func overflow(
        _ fields: [String: ConfigurationReader.Entry], _ reader: ConfigurationReader,
        choices: [OverflowPolicy] = OverflowPolicy.subscriberChoices
    ) throws(ConfigurationError) -> OverflowPolicy? {
        guard let field = fields["overflow"] else { return nil }
        return try reader.choice(field.value, field.path, choices)
    }

    /// The position of `node`.
    static func position(_ node: Node) -> SourceSegment {
        SourceSegment(line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
    }
}
