/// Counters the hub keeps so that nothing is dropped silently (PROTOCOL.md §5.7), in
/// total and per name.
///
/// Per-name counters are bounded: the first ``nameCapacity`` names get their own
/// ``NameCounters``; every later name shares ``other`` (its name is ``otherName``), so a
/// client that makes up many names cannot grow the table or the metrics' label set.
/// Ad-hoc pipeline subscriptions count under ``adHoc``. Counters are cumulative: a name
/// that is deleted keeps its counters (and its label) until the process ends.
///
/// Confined to the hub's event loop like every hub object.
public final class HubMetrics {
    /// The label of the counters shared by the names past ``nameCapacity``.
    public static let otherName = "$other"
    /// The label of the counters of ad-hoc pipeline subscriptions.
    public static let adHocName = "$adhoc"

    /// Values published into subjects (`send`).
    public internal(set) var published = 0
    /// Trigger activations.
    public internal(set) var activations = 0
    /// Values discarded by a `dropOldest`, `dropNewest` or `latest` buffer.
    public internal(set) var dropped = 0
    /// Subscriptions ended by an `overflow` error.
    public internal(set) var overflows = 0
    /// Failures of named pipelines: once per failure of a run, however many clients share
    /// it, running pipelines (no subscriber) and those restarted after a back-off included.
    public internal(set) var namedPipelineFailures = 0

    /// How many names get their own counters.
    public let nameCapacity: Int
    /// The counters shared by the names past ``nameCapacity``.
    public let other = NameCounters(name: HubMetrics.otherName)
    /// The counters of ad-hoc pipeline subscriptions.
    public let adHoc = NameCounters(name: HubMetrics.adHocName)
    private var byName: [String: NameCounters] = [:]

    /// Counters at zero; the first `nameCapacity` names get their own counters.
    public init(nameCapacity: Int = 200) {
        self.nameCapacity = max(0, nameCapacity)
    }

    /// Counts `count` dropped values.
    public func recordDropped(_ count: Int) { dropped += count }

    /// Counts one subscription ended by overflow.
    public func recordOverflow() { overflows += 1 }

    /// The counters of `name` (a `kind`: `subject`, `trigger`, `pipeline`): its own while
    /// the table has room, else ``other``. A name keeps the kind it was first counted as.
    public func counters(for name: String, kind: String? = nil) -> NameCounters {
        if let counters = byName[name] { return counters }
        guard byName.count < nameCapacity else { return other }
        let counters = NameCounters(name: name)
        counters.kind = kind
        byName[name] = counters
        return counters
    }

    /// Every name's own counters, then ``other`` and ``adHoc`` (for the metrics).
    public var allCounters: [NameCounters] {
        Array(byName.values) + [other, adHoc]
    }

    /// Values delivered to subscriptions, over every name.
    public var delivered: Int {
        allCounters.reduce(0) { $0 + $1.delivered }
    }
}
