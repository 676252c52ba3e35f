/// Where a page of the catalog ends (PROTOCOL.md §4, `list`): the last entry a
/// `catalog` held, which the next `list` names in `after` to go on from there.
///
/// The catalog's entries are in one order: subjects, then named pipelines, then
/// triggers, each by name (bytewise on UTF-8). A cursor is one position in that
/// order. On the wire it is the string `"KIND:NAME"` (`s`, `p` or `t`); clients
/// treat it as opaque and hand back what the server gave.
public struct CatalogCursor: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Which list of the catalog.
    public enum Kind: UInt8, Hashable, Sendable, Comparable, CaseIterable {
        /// A subject.
        case subject = 0
        /// A named pipeline.
        case pipeline = 1
        /// A trigger.
        case trigger = 2

        /// The letter of the wire form.
        var letter: Character {
            switch self {
            case .subject: "s"
            case .pipeline: "p"
            case .trigger: "t"
            }
        }

        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The list.
    public var kind: Kind
    /// The entry's name.
    public var name: String

    /// A cursor at the entry `name` of the list `kind`.
    public init(_ kind: Kind, _ name: String) {
        self.kind = kind
        self.name = name
    }

    /// Parses the wire form; `nil` unless it is `s:`, `p:` or `t:` followed by a valid name.
    public init?(wire: String) {
        let utf8 = wire.utf8
        guard utf8.count >= 3, utf8.dropFirst().first == UInt8(ascii: ":") else { return nil }
        let kind: Kind
        switch utf8.first {
        case UInt8(ascii: "s"): kind = .subject
        case UInt8(ascii: "p"): kind = .pipeline
        case UInt8(ascii: "t"): kind = .trigger
        default: return nil
        }
        let name = String(wire.dropFirst(2))
        guard HubName.isValid(name) else { return nil }
        self.init(kind, name)
    }

    /// The wire form, `"KIND:NAME"`.
    public var wire: String { "\(kind.letter):\(name)" }

    public var description: String { wire }

    /// Catalog order: by list, then bytewise by name.
    public static func < (lhs: CatalogCursor, rhs: CatalogCursor) -> Bool {
        lhs.kind != rhs.kind ? lhs.kind < rhs.kind : lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }
}
