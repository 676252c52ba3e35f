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
    /// The whole catalog: every subject, pipeline and trigger with its subscriber count
    /// (the system subjects are left out: PROTOCOL.md documents them).
    public func catalog() -> Catalog {
        let local = localCatalog()
        return clusterLink?.clusterCatalog(merging: local) ?? local
    }

    /// This hub's own catalog (in a cluster, ``catalog()`` adds the other nodes').
    public func localCatalog() -> Catalog {
        var catalog = Catalog()
        for (name, entry) in entries where !HubName.isSystem(name) {
            Hub.append(name, entry, to: &catalog)
        }
        return catalog.sorted()
    }

    /// One page of the catalog `list` answers: the entries after `after` in catalog order
    /// (``CatalogCursor``) that `isVisible` lets through, at most `limit` of them and about
    /// `maxBytes` of JSON (at least one entry), with ``Catalog/next`` set when more follow.
    /// Alone, it costs one pass over the names and a heap of `limit` entries, whatever the
    /// catalog's size.
    public func catalog(
        after: CatalogCursor?, limit: Int, maxBytes: Int, isVisible: (String) -> Bool = { _ in true }
    ) -> Catalog {
        if let clusterLink {
            // The cluster's catalog is assembled from every node's: page it in memory.
            return clusterLink.clusterCatalog(merging: localCatalog())
                .page(after: after, limit: limit, maxBytes: maxBytes, isVisible: isVisible)
        }
        let limit = max(1, limit)
        var page = Heap<CatalogCursor>()
        var more = false
        for (name, entry) in entries where !HubName.isSystem(name) {
            let cursor = CatalogCursor(Hub.cursorKind(of: entry), name)
            if let after, cursor <= after { continue }
            guard isVisible(name) else { continue }
            if page.count < limit {
                page.insert(cursor)
            } else if let last = page.max, cursor < last {
                page.replaceMax(with: cursor)
                more = true
            } else {
                more = true
            }
        }
        // The chosen entries, cut to the page's bytes by the rule every catalog is paged by.
        var chosen = Catalog()
        for cursor in page.unordered.sorted() {
            if let entry = entries[cursor.name] { Hub.append(cursor.name, entry, to: &chosen) }
        }
        return chosen.page(after: nil, limit: limit, maxBytes: maxBytes, moreFollow: more)
    }

    private static func cursorKind(of entry: Entry) -> CatalogCursor.Kind {
        switch entry {
        case .subject: .subject
        case .pipeline: .pipeline
        case .trigger: .trigger
        }
    }

    private static func append(_ name: String, _ entry: Entry, to catalog: inout Catalog) {
        switch entry {
        case .subject(let subject):
            let state: Catalog.SubjectEntry.State =
                subject.failure != nil ? .failed : subject.isCompleted ? .completed : .open
            catalog.subjects.append(Catalog.SubjectEntry(
                name: name, kind: subject.kind == .passthrough ? .passthrough : .currentValue,
                value: subject.currentValue, subscribers: subject.subscriberCount, state: state))
        case .trigger(let trigger):
            catalog.triggers.append(Catalog.TriggerEntry(name: name, subscribers: trigger.subscriberCount))
        case .pipeline(let pipeline):
            catalog.pipelines.append(Catalog.PipelineEntry(name: name, subscribers: pipeline.subscriberCount))
        }
    }
}
