import HubValue

/// The answer to `list` (PROTOCOL.md §4): the subjects (with their state), named
/// pipelines and triggers of the hub, with their subscriber counts, and the server's
/// open connections: all of them, or one page of them with ``next`` naming where the
/// following page starts.
///
/// The hub may build it in any order: ``ServerMessage/encode(into:)`` writes
/// each list sorted by name, as the protocol requires. Decoding keeps the wire
/// order.
public struct Catalog: Hashable, Sendable {
    /// A subject in the catalog.
    public struct SubjectEntry: Hashable, Sendable {
        /// The kind of a subject.
        public enum Kind: String, Hashable, Sendable, CaseIterable {
            /// A passthrough subject (no current value).
            case passthrough = "passthrough"
            /// A current-value subject.
            case currentValue = "currentValue"
        }

        /// Whether a subject still takes values.
        public enum State: String, Hashable, Sendable, CaseIterable {
            /// It takes values.
            case open = "open"
            /// It has completed: `send` is `completed` until it is deleted.
            case completed = "completed"
            /// It has failed: likewise.
            case failed = "failed"
        }

        /// The subject's name.
        public var name: String
        /// Passthrough or current-value.
        public var kind: Kind
        /// The current value of a current-value subject (written only when present).
        public var value: Value?
        /// How many subscriptions it has.
        public var subscribers: Int
        /// Open, completed or failed (`open` when a server does not say).
        public var state: State

        /// An entry.
        public init(name: String, kind: Kind, value: Value? = nil, subscribers: Int, state: State = .open) {
            self.name = name
            self.kind = kind
            self.value = value
            self.subscribers = subscribers
            self.state = state
        }
    }

    /// A trigger in the catalog.
    public struct TriggerEntry: Hashable, Sendable, ExpressibleByStringLiteral {
        /// The trigger's name.
        public var name: String
        /// How many subscriptions it has (0 when a server does not say).
        public var subscribers: Int

        /// An entry.
        public init(name: String, subscribers: Int = 0) {
            self.name = name
            self.subscribers = subscribers
        }

        /// An entry with no subscribers.
        public init(stringLiteral name: String) {
            self.init(name: name)
        }
    }

    /// A named pipeline in the catalog.
    public struct PipelineEntry: Hashable, Sendable {
        /// The pipeline's name.
        public var name: String
        /// How many subscriptions it has.
        public var subscribers: Int

        /// An entry.
        public init(name: String, subscribers: Int) {
            self.name = name
            self.subscribers = subscribers
        }
    }

    /// The subjects.
    public var subjects: [SubjectEntry]
    /// The named pipelines.
    public var pipelines: [PipelineEntry]
    /// The triggers.
    public var triggers: [TriggerEntry]
    /// The server's open connections (`nil` when a server does not say).
    public var connections: Int?
    /// Where the next page starts (the `after` of the next `list`); `nil` on the last page.
    public var next: CatalogCursor?

    /// The most entries a `list` may ask for in one page (`limit`), and the most a page
    /// holds when it does not ask.
    public static let maxPageEntries = 10_000

    /// A catalog, in any order.
    public init(
        subjects: [SubjectEntry] = [], pipelines: [PipelineEntry] = [], triggers: [TriggerEntry] = [],
        connections: Int? = nil, next: CatalogCursor? = nil
    ) {
        self.subjects = subjects
        self.pipelines = pipelines
        self.triggers = triggers
        self.connections = connections
        self.next = next
    }

    /// How many entries (subjects, pipelines and triggers) it holds.
    public var count: Int { subjects.count + pipelines.count + triggers.count }

    /// Appends the entries of `page` (a following page of the same catalog) and takes
    /// its `connections` and `next`.
    public mutating func append(page: Catalog) {
        subjects += page.subjects
        pipelines += page.pipelines
        triggers += page.triggers
        connections = page.connections ?? connections
        next = page.next
    }

    /// The same catalog with every list sorted by name (the order on the wire).
    public func sorted() -> Catalog {
        Catalog(
            subjects: subjects.sorted { Catalog.precedes($0.name, $1.name) },
            pipelines: pipelines.sorted { Catalog.precedes($0.name, $1.name) },
            triggers: triggers.sorted { Catalog.precedes($0.name, $1.name) },
            connections: connections,
            next: next
        )
    }

    /// Name order: bytewise on UTF-8 (names are ASCII, so this is also code point order).
    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Appends `"subjects":[...],"pipelines":[...],"triggers":[...]`, each sorted by name,
    /// then `"connections":N` when known and `"next":"KIND:NAME"` when there is a next page.
    func encodeMembers(into buffer: inout [UInt8]) {
        let sorted = self.sorted()
        WireBytes.append(#""subjects":["#, to: &buffer)
        for (index, subject) in sorted.subjects.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            WireBytes.append(#"{"name":"#, to: &buffer)
            WireBytes.appendString(subject.name, to: &buffer)
            WireBytes.append(#","kind":"#, to: &buffer)
            WireBytes.appendString(subject.kind.rawValue, to: &buffer)
            if let value = subject.value {
                WireBytes.append(#","value":"#, to: &buffer)
                value.writeJSON(into: &buffer)
            }
            WireBytes.append(#","subscribers":"#, to: &buffer)
            WireBytes.append(subject.subscribers, to: &buffer)
            WireBytes.append(#","state":"#, to: &buffer)
            WireBytes.appendString(subject.state.rawValue, to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        }
        WireBytes.append(#"],"pipelines":["#, to: &buffer)
        for (index, pipeline) in sorted.pipelines.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            WireBytes.append(#"{"name":"#, to: &buffer)
            WireBytes.appendString(pipeline.name, to: &buffer)
            WireBytes.append(#","subscribers":"#, to: &buffer)
            WireBytes.append(pipeline.subscribers, to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        }
        WireBytes.append(#"],"triggers":["#, to: &buffer)
        for (index, trigger) in sorted.triggers.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            WireBytes.append(#"{"name":"#, to: &buffer)
            WireBytes.appendString(trigger.name, to: &buffer)
            WireBytes.append(#","subscribers":"#, to: &buffer)
            WireBytes.append(trigger.subscribers, to: &buffer)
            buffer.append(UInt8(ascii: "}"))
        }
        buffer.append(UInt8(ascii: "]"))
        if let connections {
            WireBytes.append(#","connections":"#, to: &buffer)
            WireBytes.append(connections, to: &buffer)
        }
        if let next {
            WireBytes.append(#","next":"#, to: &buffer)
            WireBytes.appendString(next.wire, to: &buffer)
        }
    }

    /// Decodes the catalog members of a `catalog` message, strictly.
    static func decode(from fields: Value.Object) throws(WireError) -> Catalog {
        var catalog = Catalog()
        for entry in try array(fields, "subjects") {
            let object = try entryObject(entry, "subjects")
            guard case let .string(kindText)? = object["kind"], let kind = SubjectEntry.Kind(rawValue: kindText) else {
                throw WireError(WireFields.bad("catalog: a subject's 'kind' must be \"passthrough\" or \"currentValue\""))
            }
            var state = SubjectEntry.State.open
            if let raw = object["state"] {
                guard case let .string(text) = raw, let known = SubjectEntry.State(rawValue: text) else {
                    throw WireError(WireFields.bad("catalog: a subject's 'state' must be \"open\", \"completed\" or \"failed\""))
                }
                state = known
            }
            catalog.subjects.append(SubjectEntry(
                name: try name(object, "subjects"),
                kind: kind,
                value: object["value"],
                subscribers: try subscribers(object, "subjects"),
                state: state
            ))
        }
        for entry in try array(fields, "pipelines") {
            let object = try entryObject(entry, "pipelines")
            catalog.pipelines.append(PipelineEntry(name: try name(object, "pipelines"), subscribers: try subscribers(object, "pipelines")))
        }
        for entry in try array(fields, "triggers") {
            let object = try entryObject(entry, "triggers")
            catalog.triggers.append(TriggerEntry(
                name: try name(object, "triggers"),
                subscribers: object["subscribers"] == nil ? 0 : try subscribers(object, "triggers")))
        }
        if let raw = fields["connections"] {
            guard let count = WireFields.integer(raw), count >= 0 else {
                throw WireError(WireFields.bad("catalog: 'connections' must be an integer ≥ 0"))
            }
            catalog.connections = Int(count)
        }
        if let raw = fields["next"] {
            guard case let .string(text) = raw, let cursor = CatalogCursor(wire: text) else {
                throw WireError(WireFields.bad("catalog: 'next' must be a cursor string (\"s:NAME\", \"p:NAME\" or \"t:NAME\")"))
            }
            catalog.next = cursor
        }
        return catalog
    }

    private static func array(_ fields: Value.Object, _ key: String) throws(WireError) -> [Value] {
        guard case let .array(entries)? = fields[key] else {
            throw WireError(WireFields.bad("catalog: '\(key)' must be an array"))
        }
        return entries
    }

    private static func entryObject(_ entry: Value, _ list: String) throws(WireError) -> Value.Object {
        guard case let .object(object) = entry else {
            throw WireError(WireFields.bad("catalog: every entry of '\(list)' must be an object"))
        }
        return object
    }

    private static func name(_ object: Value.Object, _ list: String) throws(WireError) -> String {
        guard case let .string(name)? = object["name"], HubName.isValid(name) else {
            throw WireError(WireFields.bad("catalog: every entry of '\(list)' needs a valid 'name'"))
        }
        return name
    }

    private static func subscribers(_ object: Value.Object, _ list: String) throws(WireError) -> Int {
        guard let raw = object["subscribers"], let count = WireFields.integer(raw), count >= 0 else {
            throw WireError(WireFields.bad("catalog: 'subscribers' in '\(list)' must be an integer ≥ 0"))
        }
        return Int(count)
    }
}

extension Catalog {
    /// The page of this (whole) catalog after `after` in catalog order (``CatalogCursor``):
    /// the entries `isVisible` lets through, at most `limit` of them and about `maxBytes`
    /// of JSON (at least one entry), with ``next`` set when more follow. For a catalog
    /// assembled in memory (a cluster's, or the entries a hub chose for a page from its own
    /// names); `moreFollow` says that entries past this catalog exist (``next`` is then
    /// set whatever this catalog holds).
    public func page(
        after: CatalogCursor?, limit: Int, maxBytes: Int, isVisible: (String) -> Bool = { _ in true },
        moreFollow: Bool = false
    ) -> Catalog {
        let sorted = self.sorted()
        var page = Catalog(connections: connections)
        var count = 0, bytes = 0
        var more = false
        func admit(_ cursor: CatalogCursor, size: Int) -> Bool? {
            if let after, cursor <= after { return false }
            guard isVisible(cursor.name) else { return false }
            if count >= max(1, limit) || (count > 0 && bytes + size > maxBytes) {
                more = true
                return nil
            }
            count += 1
            bytes += size
            page.next = cursor
            return true
        }
        var scratch: [UInt8] = []
        outer: do {
            for subject in sorted.subjects {
                var size = 80 + subject.name.utf8.count
                if let value = subject.value {
                    scratch.removeAll(keepingCapacity: true)
                    value.writeJSON(into: &scratch)
                    size += scratch.count
                }
                switch admit(CatalogCursor(.subject, subject.name), size: size) {
                case true?: page.subjects.append(subject)
                case false?: continue
                case nil: break outer
                }
            }
            for pipeline in sorted.pipelines {
                switch admit(CatalogCursor(.pipeline, pipeline.name), size: 80 + pipeline.name.utf8.count) {
                case true?: page.pipelines.append(pipeline)
                case false?: continue
                case nil: break outer
                }
            }
            for trigger in sorted.triggers {
                switch admit(CatalogCursor(.trigger, trigger.name), size: 80 + trigger.name.utf8.count) {
                case true?: page.triggers.append(trigger)
                case false?: continue
                case nil: break outer
                }
            }
        }
        if !more, !moreFollow { page.next = nil }
        return page
    }
}
