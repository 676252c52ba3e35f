import HubWire

/// The catalogs other nodes broadcast, and the merge `list` answers with: every name
/// any live node has, with the subscriber counts of all of them summed.
///
/// A node that has not been heard from within ``timeout`` is forgotten (it stopped, or
/// it or this node lost NATS). At most ``maxNodes`` nodes are kept. Loop-confined.
struct ClusterCatalog {
    /// How long a node's catalog counts after it was received, in nanoseconds.
    let timeout: Int64
    /// How many other nodes' catalogs are kept.
    let maxNodes: Int
    private var nodes: [String: (heard: Int64, catalog: Catalog)] = [:]

    init(timeout: Duration, maxNodes: Int) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        self.maxNodes = maxNodes
    }

    /// Records `catalog` from `node`, heard at `now` (monotonic nanoseconds).
    mutating func record(_ catalog: Catalog, from node: String, at now: Int64) {
        forgetStale(at: now)
        guard nodes[node] != nil || nodes.count < maxNodes else { return }
        nodes[node] = (now, catalog)
    }

    /// Forgets the nodes not heard from within the timeout.
    mutating func forgetStale(at now: Int64) {
        nodes = nodes.filter { now - $0.value.heard <= timeout }
    }

    /// The names of the nodes heard from within the timeout, sorted.
    func liveNodes(at now: Int64) -> [String] {
        nodes.filter { now - $0.value.heard <= timeout }.map(\.key).sorted()
    }

    /// `local` with the live nodes' entries added: subscriber counts summed by name, names
    /// only other nodes have appended, the local state and value kept where the name is
    /// local (a subject failed or completed anywhere shows so).
    func merging(_ local: Catalog, at now: Int64) -> Catalog {
        var subjects: [String: Catalog.SubjectEntry] = [:]
        var pipelines: [String: Catalog.PipelineEntry] = [:]
        var triggers: [String: Catalog.TriggerEntry] = [:]
        for entry in local.subjects { subjects[entry.name] = entry }
        for entry in local.pipelines { pipelines[entry.name] = entry }
        for entry in local.triggers { triggers[entry.name] = entry }
        for name in liveNodes(at: now) {
            guard let remote = nodes[name]?.catalog else { continue }
            for entry in remote.subjects {
                guard var known = subjects[entry.name] else {
                    subjects[entry.name] = entry
                    continue
                }
                known.subscribers += entry.subscribers
                if Self.rank(entry.state) > Self.rank(known.state) { known.state = entry.state }
                if known.value == nil { known.value = entry.value }
                subjects[entry.name] = known
            }
            for entry in remote.pipelines {
                pipelines[entry.name, default: Catalog.PipelineEntry(name: entry.name, subscribers: 0)].subscribers +=
                    entry.subscribers
            }
            for entry in remote.triggers {
                triggers[entry.name, default: Catalog.TriggerEntry(name: entry.name)].subscribers += entry.subscribers
            }
        }
        return Catalog(
            subjects: Array(subjects.values), pipelines: Array(pipelines.values), triggers: Array(triggers.values),
            connections: local.connections
        ).sorted()
    }

    private static func rank(_ state: Catalog.SubjectEntry.State) -> Int {
        switch state {
        case .open: return 0
        case .completed: return 1
        case .failed: return 2
        }
    }
}
