import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// One hub's membership of a cluster of hubs over NATS.
///
/// - A value sent here to a subject (passthrough or current-value, without history) is
///   published on `hub.v.NAME` (``ClusterSubjectNames``) before the local subscribers get
///   it; the nodes listening deliver it to theirs, once per node whatever their local
///   fan-out. A node listens to `hub.v.NAME` only while it has local subscribers of NAME
///   (interest), and always to its current-value subjects (so that their values agree).
/// - Trigger activations travel likewise on `hub.t.NAME`, with interest.
/// - `complete`, `fail` and `delete` go to every node on `hub.ctl`, after the values sent
///   before them (one connection, one delivery thread: NATS keeps a publisher's order).
/// - The current values of current-value subjects are also written to a JetStream
///   key-value bucket (`hub_current`), which a node reads when it connects or reconnects:
///   a node that was away catches up (when NATS runs with JetStream, `nats-server -js`).
/// - A running pipeline (`run: true`) runs on one node: the holder of its lease in the
///   JetStream bucket `hub_leases`, renewed every second; when the holder dies or loses
///   NATS the lease passes to another node within three seconds.
/// - Each node broadcasts its catalog every ``Configuration/catalogInterval`` (and soon
///   after its interest changes); `list` sums the live nodes' subscriber counts.
///
/// Loop-confined: made, started and used on the hub's event loop; what NATS delivers
/// comes to the loop through a bounded inbox. While NATS is unreachable the node serves
/// its local clients as a lone hub and ``readinessCheck`` reports the problem (`/ready`
/// 503); libnats reconnects and makes the subscriptions again.
public final class ClusterNode: HubClusterLink {
    /// How a node joins its cluster.
    public struct Configuration: Sendable {
        /// The NATS servers (`nats://HOST:PORT`).
        public var urls: [String]
        /// This node's name, unique in the cluster.
        public var nodeName: String
        /// The prefix of the NATS subjects.
        public var subjectPrefix = "hub"
        /// How often the node broadcasts its catalog.
        public var catalogInterval: Duration = .seconds(1)
        /// After how many catalog intervals without news another node is forgotten.
        public var forgetAfterIntervals = 3
        /// How many other nodes' catalogs are kept.
        public var maxNodes = 256
        /// How many names a broadcast catalog holds at most (the first, by name).
        public var maxCatalogEntries = 5000
        /// How many bytes a broadcast catalog may take (NATS's default maximum payload is
        /// 1 MiB): beyond it current values are left out, then names.
        public var maxCatalogBytes = 512 << 10
        /// How many messages from NATS may wait for the loop before values are dropped.
        public var inboxCapacity = 65_536
        /// How long to wait between reconnect attempts.
        public var reconnectWait: Duration = .milliseconds(250)
        /// Whether what the node publishes is written to NATS by the loop at once (one
        /// system call per value, about a millisecond less latency) instead of by libnats's
        /// flusher thread, which batches (the default: the loop does no socket writes).
        public var sendImmediately = false
        /// The JetStream key-value bucket that keeps the current values of current-value
        /// subjects (read when the node connects or reconnects); `nil`, or a NATS without
        /// JetStream: current values travel only as they are sent.
        public var currentValueBucket: String? = "hub_current"
        /// The largest current value the bucket keeps.
        public var maxCurrentValueBytes = 1 << 20
        /// The JetStream key-value bucket of the running pipelines' leases (`run: true`:
        /// one node runs each); `nil`, or a NATS without JetStream: every node runs them.
        public var leaseBucket: String? = "hub_leases"
        /// How often a node renews its leases and tries to take the free ones; a lease
        /// not renewed for three of these passes to another node.
        public var leaseRenewal: Duration = .seconds(1)

        /// A node named `nodeName` of the cluster behind `urls`.
        public init(urls: [String], nodeName: String) {
            self.urls = urls
            self.nodeName = nodeName
        }
    }

    /// The state of the node's NATS connection.
    public enum ConnectionState: String, Sendable {
        /// Connected (first time).
        case connected
        /// Lost; reconnecting.
        case disconnected
        /// Connected again.
        case reconnected
        /// Closed for good.
        case closed
    }

    /// The configuration it runs with.
    public let configuration: Configuration
    /// The node's NATS subjects.
    public let names: ClusterSubjectNames
    private let hub: Hub
    private let eventLoop: EventLoop
    private let logger: Logger
    private var connection: NATSConnection?
    private let inbox: ClusterInbox
    private let deliverer = ClusterInbox.Deliverer()
    /// The subscriptions for local interest, by route (values or activations of a name).
    private var interest: [ClusterRoute: NATSSubscription] = [:]
    private var fixedSubscriptions: [NATSSubscription] = []
    private var pendingInterest: Set<String> = []
    private var remoteCatalogs: ClusterCatalog
    private var catalogTimer: (any Cancellable)?
    private var catalogSoon: (any Cancellable)?
    private var publishFailures = 0
    private var isStopped = false
    /// Per current-value subject, how many values it was sent or received (a read of the
    /// bucket that began before the last of them is stale).
    private var valueGenerations: [String: UInt64] = [:]
    /// The bucket's binding, made and used on `worker` (blocking requests).
    private let keyValue = KeyValueBinding()
    private let worker = DispatchQueue(label: "hub.cluster.kv")
    private var leases: PipelineLeases?
    private var leaseTimer: (any Cancellable)?
    private var isRenewing = false
    /// The running pipelines this node holds the lease of (and so runs).
    private var heldLeases: Set<String> = []
    /// False once the server turned out to have no JetStream: every node runs its pipelines.
    private var placesPipelines = true

    /// A node for `hub` on `eventLoop` (the hub's); nothing connects until ``start()``.
    public init(configuration: Configuration, hub: Hub, eventLoop: EventLoop, logger: Logger) {
        self.configuration = configuration
        names = ClusterSubjectNames(prefix: configuration.subjectPrefix)
        self.hub = hub
        self.eventLoop = eventLoop
        var logger = logger
        logger[metadataKey: "node"] = "\(configuration.nodeName)"
        self.logger = logger
        inbox = ClusterInbox(capacity: configuration.inboxCapacity, eventLoop: eventLoop, deliverer: deliverer)
        remoteCatalogs = ClusterCatalog(
            timeout: configuration.catalogInterval * configuration.forgetAfterIntervals, maxNodes: configuration.maxNodes)
    }

    /// Connects to NATS (without waiting for a server: it keeps trying), becomes the hub's
    /// cluster link and starts broadcasting its catalog. On the loop.
    public func start() throws(NATSError) {
        eventLoop.preconditionInEventLoop()
        deliverer.handle = { [weak self] batch in self?.handle(batch) }
        let inbox = self.inbox
        var options = NATSConnection.Options(urls: configuration.urls, name: configuration.nodeName)
        options.reconnectWait = configuration.reconnectWait
        options.pendingMessages = configuration.inboxCapacity
        options.sendImmediately = configuration.sendImmediately
        let connection = try NATSConnection(
            options: options,
            handlers: .init(
                connected: { inbox.push(.connection(.connected)) },
                disconnected: { inbox.push(.connection(.disconnected)) },
                reconnected: { inbox.push(.connection(.reconnected)) },
                closed: { inbox.push(.connection(.closed)) }),
            logger: logger)
        self.connection = connection
        fixedSubscriptions.append(try connection.subscribe(to: names.control) { inbox.push(.message(.control, $0)) })
        fixedSubscriptions.append(try connection.subscribe(to: names.catalog) { inbox.push(.message(.catalog, $0)) })
        hub.clusterLink = self
        if let bucket = configuration.leaseBucket {
            leases = PipelineLeases(bucket: bucket, ttl: configuration.leaseRenewal * 3, node: configuration.nodeName)
            hub.pipelinePlacement = { [weak self] pipeline in self?.mayRun(pipeline.name) ?? true }
            leaseTimer = hub.scheduler.schedule(
                after: hub.scheduler.now.advanced(by: configuration.leaseRenewal), interval: configuration.leaseRenewal
            ) { [weak self] in self?.renewLeases() }
        }
        // Current-value subjects are listened to always; subjects and triggers with
        // subscribers already (none, at start) by interest.
        for (name, entry) in hub.allEntries {
            if case .subject = entry { reviewInterest(in: name) }
            if case .trigger = entry { reviewInterest(in: name) }
        }
        catalogTimer = hub.scheduler.schedule(
            after: hub.scheduler.now.advanced(by: configuration.catalogInterval), interval: configuration.catalogInterval
        ) { [weak self] in
            self?.reviewFollowing()
            self?.broadcastCatalog()
        }
        broadcastCatalog()
        logger.info("cluster node started", metadata: [
            "nats": "\(configuration.urls.joined(separator: ","))", "connected": "\(connection.isConnected)",
        ])
    }

    /// Leaves the cluster: no more broadcasts, subscriptions or forwarding; closes NATS.
    public func stop() {
        guard !isStopped else { return }
        isStopped = true
        catalogTimer?.cancel()
        catalogSoon?.cancel()
        leaseTimer?.cancel()
        if hub.clusterLink === self { hub.clusterLink = nil }
        for subscription in interest.values { subscription.unsubscribe() }
        interest = [:]
        fixedSubscriptions.forEach { $0.unsubscribe() }
        fixedSubscriptions = []
        connection?.close()
    }

    /// Whether the node is connected to NATS now (any thread).
    public var isConnected: Bool { connection?.isConnected ?? false }

    /// A readiness check for ``HubService/addReadinessCheck(named:_:)``: the problem while
    /// NATS is unreachable, `nil` while connected. Callable from any thread.
    public var readinessCheck: @Sendable () -> String? {
        let connection = self.connection
        return { connection?.isConnected == true ? nil : "not connected to NATS" }
    }

    /// How many values from other nodes were dropped because this node's loop was behind.
    public var droppedFromCluster: Int { inbox.dropped }

    /// The names of the other nodes heard from recently, sorted.
    public var liveNodes: [String] { remoteCatalogs.liveNodes(at: EventLoop.monotonicNanoseconds()) }

    // MARK: HubClusterLink (local events, on the loop)

    public func hub(_ hub: Hub, published value: Value, to subject: HubSubject) {
        let bytes = value.jsonBytes()
        publish(to: names.values(subject.name), payload: bytes)
        if subject.kind == .currentValue, let bucket = configuration.currentValueBucket {
            valueGenerations[subject.name, default: 0] &+= 1
            publish(to: "$KV.\(bucket).\(names.currentValueKey(subject.name))", payload: bytes)
        }
    }

    public func hub(_ hub: Hub, finished subject: HubSubject, error: Value?) {
        var headers = [
            ClusterSubjectNames.operationHeader: error == nil ? "complete" : "fail",
            ClusterSubjectNames.nameHeader: subject.name,
        ]
        let payload = error?.jsonBytes() ?? []
        guard let store = jetStreamStore(of: subject) else {
            return publish(to: names.control, payload: payload, headers: headers)
        }
        // The other nodes deliver the stream up to its last value (this node's appends
        // made before the end included), then finish.
        let name = subject.name
        store.lastSequence(subject: name) { [weak self] last in
            guard let self else { return }
            if let last { headers[ClusterSubjectNames.throughHeader] = String(last) }
            publish(to: names.control, payload: payload, headers: headers)
            logger.debug("subject with history finished", metadata: ["subject": "\(name)", "through": "\(last.map(String.init) ?? "?")"])
        }
    }

    public func hub(_ hub: Hub, deleted subject: HubSubject) {
        let name = subject.name
        let headers = [ClusterSubjectNames.operationHeader: "delete", ClusterSubjectNames.nameHeader: name]
        if let store = jetStreamStore(of: subject) {
            // Told after the stream's deletion, so that the others let go of their logs and
            // find the next stream, never the old one.
            store.afterRequestsMadeSoFar { [weak self] in
                guard let self else { return }
                publish(to: names.control, payload: [], headers: headers)
            }
            return
        }
        publish(to: names.control, payload: [], headers: headers)
        if subject.kind == .currentValue, let bucket = configuration.currentValueBucket {
            // The value goes from the bucket too: the subject starts over from its initial value.
            valueGenerations[name, default: 0] &+= 1
            publish(to: "$KV.\(bucket).\(names.currentValueKey(name))", payload: [], headers: ["KV-Operation": "DEL"])
        }
    }

    public func hub(_ hub: Hub, activated trigger: HubTrigger, key: Value?) {
        publish(to: names.activations(trigger.name), payload: key?.jsonBytes() ?? [])
    }

    public func hub(_ hub: Hub, interestMayHaveChangedIn name: String) {
        // Reviewed once the loop's present work is done (a cancel lowers the count after).
        guard pendingInterest.insert(name).inserted, pendingInterest.count == 1 else { return }
        eventLoop.executeSoon { [weak self] in
            guard let self else { return }
            let names = self.pendingInterest
            self.pendingInterest = []
            for name in names { self.reviewInterest(in: name) }
            self.broadcastCatalogSoon()
        }
    }

    public func clusterCatalog(merging local: Catalog) -> Catalog {
        remoteCatalogs.merging(local, at: EventLoop.monotonicNanoseconds())
    }

    /// The JetStream store keeping `subject`'s history, if it has history in one.
    private func jetStreamStore(of subject: HubSubject) -> JetStreamStore? {
        guard let history = subject.history else { return nil }
        return (history.isDurable ? hub.durableStore : hub.historyStore) as? JetStreamStore
    }

    // MARK: Interest

    /// Reviews the subjects kept in JetStream: a replay that ended tells no one, so the
    /// node stops following a subject without subscribers at its next catalog interval.
    private func reviewFollowing() {
        for (name, entry) in hub.allEntries {
            guard case .subject(let subject) = entry, subject.history != nil else { continue }
            reviewInterest(in: name)
        }
    }

    /// Listens to `name`'s values (or activations) in NATS when it has local subscribers
    /// (or is a current-value subject), and stops when it has none.
    private func reviewInterest(in name: String) {
        guard !isStopped, let connection else { return }
        let route: ClusterRoute
        let wanted: Bool
        switch hub.entry(named: name) {
        case .subject(let subject):
            route = .values(name)
            wanted = subject.history == nil && (subject.subscriberCount > 0 || subject.kind == .currentValue)
            if let store = jetStreamStore(of: subject) {
                // Its values come from its stream, followed while it has subscribers here.
                do {
                    try store.setFollowing(subject.subscriberCount > 0 && !subject.isCompleted, subject: name)
                } catch {
                    logger.warning("cannot follow the subject's stream", metadata: ["subject": "\(name)", "error": "\(error)"])
                }
            }
        case .trigger(let trigger):
            route = .activations(name)
            wanted = trigger.subscriberCount > 0
        case .pipeline, nil:
            for route in [ClusterRoute.values(name), .activations(name)] { interest.removeValue(forKey: route)?.unsubscribe() }
            return
        }
        let other: ClusterRoute = route == .values(name) ? .activations(name) : .values(name)
        interest.removeValue(forKey: other)?.unsubscribe()
        if wanted, interest[route] == nil {
            let subject = route == .values(name) ? names.values(name) : names.activations(name)
            let inbox = self.inbox
            do {
                interest[route] = try connection.subscribe(to: subject) { inbox.push(.message(route, $0)) }
                logger.debug("listening", metadata: ["subject": "\(subject)"])
            } catch {
                logger.warning("cannot listen to the cluster", metadata: ["subject": "\(subject)", "error": "\(error)"])
            }
        } else if !wanted, let subscription = interest.removeValue(forKey: route) {
            subscription.unsubscribe()
            logger.debug("stopped listening", metadata: ["subject": "\(subscription.subject)"])
        }
    }

    // MARK: Events from NATS (on the loop)

    private func handle(_ batch: [ClusterInbox.Event]) {
        guard !isStopped else { return }
        for event in batch {
            switch event {
            case .connection(let state):
                connectionChanged(state)
            case .currentValues(let reads):
                applyCurrentValues(reads)
            case .leases(let outcome):
                applyLeases(outcome)
            case .message(let route, let message):
                let origin = message.headers[ClusterSubjectNames.originHeader] ?? "?"
                guard origin != configuration.nodeName else { continue }
                switch route {
                case .values(let name): receiveValue(message.payload, for: name, from: origin)
                case .activations(let name): receiveActivation(message.payload, of: name, from: origin)
                case .control: receiveControl(message, from: origin)
                case .catalog: receiveCatalog(message.payload, from: origin)
                }
            }
        }
    }

    private func connectionChanged(_ state: ConnectionState) {
        switch state {
        case .connected, .reconnected:
            logger.notice("connected to NATS", metadata: ["state": "\(state.rawValue)", "server": "\(connection?.connectedURL ?? "?")"])
            broadcastCatalog()
            readCurrentValues()
            renewLeases()
        case .disconnected:
            logger.warning("lost NATS: serving local clients only until it is back")
        case .closed:
            logger.notice("NATS connection closed")
        }
    }

    private func receiveValue(_ payload: [UInt8], for name: String, from origin: String) {
        guard let value = try? Value.parse(payload) else {
            logger.notice("unreadable value from the cluster", metadata: ["subject": "\(name)", "from": "\(origin)"])
            return
        }
        hub.applyingClusterEvent(to: name) {
            guard case .subject(let subject) = hub.entry(named: name), !subject.isCompleted, subject.history == nil else {
                return
            }
            if subject.kind == .currentValue { valueGenerations[name, default: 0] &+= 1 }
            hub.publish(value, to: subject, sender: "node \(origin)")
        }
    }

    private func receiveActivation(_ payload: [UInt8], of name: String, from origin: String) {
        let key: Value? = payload.isEmpty ? nil : try? Value.parse(payload)
        hub.applyingClusterEvent(to: name) {
            guard case .trigger(let trigger) = hub.entry(named: name) else { return }
            hub.activate(trigger, key: key)
        }
    }

    private func receiveControl(_ message: NATSMessage, from origin: String) {
        guard let name = message.headers[ClusterSubjectNames.nameHeader], HubName.isValid(name), !HubName.isSystem(name),
              let operation = message.headers[ClusterSubjectNames.operationHeader]
        else { return }
        hub.applyingClusterEvent(to: name) {
            switch operation {
            case "complete", "fail":
                // A name this node does not know yet is made (when the hub makes names on
                // first use), so that a later send here is refused as it is everywhere.
                guard let subject = try? hub.subject(named: name), !subject.isCompleted else { return }
                // (Not a ternary: Value is nil-literal expressible, so `: nil` would be .null.)
                var error: Value? = .none
                if operation == "fail" { error = .some((try? Value.parse(message.payload)) ?? .null) }
                guard let store = jetStreamStore(of: subject),
                      let through = message.headers[ClusterSubjectNames.throughHeader].flatMap(UInt64.init)
                else {
                    return hub.finish(subject, error: error)
                }
                // Subscribers here get the stream's values up to the end first.
                store.catchUp(subject: name, through: through) { [weak self] in
                    guard let self, case .subject(let current) = hub.entry(named: name), current === subject,
                          !subject.isCompleted
                    else { return }
                    hub.applyingClusterEvent(to: name) { hub.finish(subject, error: error) }
                }
            case "delete":
                guard case .subject = hub.entry(named: name) else { return }
                try? hub.delete(name)
                logger.info("subject deleted by another node", metadata: ["subject": "\(name)", "from": "\(origin)"])
            default:
                return
            }
        }
    }

    private func receiveCatalog(_ payload: [UInt8], from origin: String) {
        guard case .catalog(_, let catalog)? = try? ServerMessage.decode(payload) else { return }
        remoteCatalogs.record(catalog, from: origin, at: EventLoop.monotonicNanoseconds())
    }

    // MARK: Current values (JetStream key-value)

    /// Reads the bucket's value of every current-value subject, off the loop; the
    /// results come back through the inbox.
    private func readCurrentValues() {
        guard let bucket = configuration.currentValueBucket, let connection else { return }
        var wanted: [(name: String, key: String, generation: UInt64)] = []
        for (name, entry) in hub.allEntries {
            guard case .subject(let subject) = entry, subject.kind == .currentValue, subject.history == nil,
                  !HubName.isSystem(name)
            else { continue }
            wanted.append((name, names.currentValueKey(name), valueGenerations[name, default: 0]))
        }
        let (inbox, binding, logger, maxBytes) = (inbox, keyValue, logger, configuration.maxCurrentValueBytes)
        let reading = wanted
        worker.async {
            do {
                let store = try binding.bind(connection, bucket: bucket, maxValueBytes: maxBytes)
                var reads: [ClusterInbox.CurrentValueRead] = []
                for item in reading {
                    reads.append(.init(name: item.name, bytes: try store.get(item.key), generation: item.generation))
                }
                inbox.push(.currentValues(reads))
            } catch {
                logger.notice("current values not read from JetStream (is it enabled? nats-server -js)", metadata: [
                    "bucket": "\(bucket)", "error": "\(error)",
                ])
            }
        }
    }

    /// Applies the values read from the bucket that nothing newer has overtaken.
    private func applyCurrentValues(_ reads: [ClusterInbox.CurrentValueRead]) {
        for read in reads where valueGenerations[read.name, default: 0] == read.generation {
            guard let bytes = read.bytes, let value = try? Value.parse(bytes),
                  case .subject(let subject) = hub.entry(named: read.name), subject.kind == .currentValue,
                  !subject.isCompleted, subject.history == nil, subject.currentValue != value
            else { continue }
            hub.applyingClusterEvent(to: read.name) { hub.publish(value, to: subject, sender: "cluster (current value)") }
        }
    }

    // MARK: Running pipelines (leases)

    /// Whether this node runs the running pipeline `name` now.
    private func mayRun(_ name: String) -> Bool { !placesPipelines || heldLeases.contains(name) }

    private var runningPipelines: [NamedPipeline] {
        hub.allEntries.compactMap { entry in
            guard case .pipeline(let pipeline) = entry.entry, pipeline.runs else { return nil }
            return pipeline
        }
    }

    /// Renews the leases, off the loop; the outcome comes back through the inbox.
    private func renewLeases() {
        guard !isStopped, !isRenewing, let leases, let connection else { return }
        let names = runningPipelines.map(\.name)
        guard !names.isEmpty else { return }
        isRenewing = true
        let inbox = self.inbox
        worker.async { inbox.push(.leases(leases.renew(names, over: connection))) }
    }

    /// Starts the pipelines whose lease this node took, stops those whose lease it lost.
    private func applyLeases(_ outcome: PipelineLeases.Outcome) {
        isRenewing = false
        let held: Set<String>
        switch outcome {
        case .held(let names):
            placesPipelines = true
            held = names
        case .unavailable(let reason):
            if placesPipelines {
                logger.warning("running pipelines run on every node: no JetStream for their leases (nats-server -js)", metadata: [
                    "error": "\(reason)",
                ])
            }
            placesPipelines = false
            held = Set(runningPipelines.map(\.name))
        case .failed(let reason):
            logger.debug("leases not renewed", metadata: ["error": "\(reason)"])
            return
        }
        let previous = heldLeases
        heldLeases = held
        for pipeline in runningPipelines {
            if held.contains(pipeline.name), !previous.contains(pipeline.name) {
                do {
                    try pipeline.start(in: hub)
                    logger.info("running pipeline placed here", metadata: ["pipeline": "\(pipeline.name)"])
                } catch {
                    logger.error("running pipeline cannot start", metadata: ["pipeline": "\(pipeline.name)", "error": "\(error)"])
                }
            } else if !held.contains(pipeline.name), previous.contains(pipeline.name) {
                // Another node resumes it from its last checkpoint: nothing more is committed here.
                pipeline.release()
                logger.notice("running pipeline's lease lost: stopped here", metadata: ["pipeline": "\(pipeline.name)"])
            }
        }
    }

    // MARK: Publishing

    private func publish(to subject: String, payload: [UInt8], headers: [String: String] = [:]) {
        guard !isStopped, let connection else { return }
        var headers = headers
        headers[ClusterSubjectNames.originHeader] = configuration.nodeName
        do {
            try connection.publish(to: subject, payload: payload, headers: headers)
        } catch {
            // Not connected and the reconnect buffer is full: the value stays local.
            publishFailures += 1
            if publishFailures == 1 || publishFailures.isMultiple(of: 1000) {
                logger.warning("cannot publish to the cluster", metadata: [
                    "subject": "\(subject)", "error": "\(error)", "failures": "\(publishFailures)",
                ])
            }
        }
    }

    /// This node's catalog (at most ``Configuration/maxCatalogEntries`` names) to every node.
    private func broadcastCatalog() {
        guard !isStopped else { return }
        remoteCatalogs.forgetStale(at: EventLoop.monotonicNanoseconds())
        var catalog = hub.localCatalog()
        let limit = configuration.maxCatalogEntries
        if catalog.subjects.count + catalog.pipelines.count + catalog.triggers.count > limit {
            catalog.subjects = Array(catalog.subjects.prefix(limit))
            catalog.pipelines = Array(catalog.pipelines.prefix(max(0, limit - catalog.subjects.count)))
            catalog.triggers = Array(catalog.triggers.prefix(max(0, limit - catalog.subjects.count - catalog.pipelines.count)))
        }
        catalog.connections = nil
        var bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
        if bytes.count > configuration.maxCatalogBytes {
            // Current values are what makes a catalog big: the others' lists do without them.
            for index in catalog.subjects.indices { catalog.subjects[index].value = nil }
            bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
            while bytes.count > configuration.maxCatalogBytes, !catalog.subjects.isEmpty {
                catalog.subjects.removeLast(max(1, catalog.subjects.count / 2))
                bytes = ServerMessage.catalog(ack: 0, catalog).jsonBytes()
            }
        }
        publish(to: names.catalog, payload: bytes)
    }

    /// A catalog broadcast in a moment, several changes of interest sharing it.
    private func broadcastCatalogSoon() {
        guard catalogSoon == nil else { return }
        catalogSoon = hub.scheduler.schedule(after: hub.scheduler.now.advanced(by: .milliseconds(20))) { [weak self] in
            self?.catalogSoon = nil
            self?.broadcastCatalog()
        }
    }
}

/// The node's binding to its key-value bucket, made once on the node's worker queue and
/// used only there.
private final class KeyValueBinding: @unchecked Sendable {
    private var store: NATSKeyValue?

    func bind(_ connection: NATSConnection, bucket: String, maxValueBytes: Int) throws(NATSError) -> NATSKeyValue {
        if let store { return store }
        let bound = try NATSKeyValue(connection: connection, bucket: bucket, maxValueBytes: maxValueBytes)
        store = bound
        return bound
    }
}
