import HubWire

/// The NATS subjects the nodes of a cluster use, under a prefix (`hub` by default):
///
/// | subject | what travels on it |
/// |---|---|
/// | `hub.v.NAME` | the values sent to the hub subject NAME (payload: the value's JSON) |
/// | `hub.t.NAME` | the activations of the trigger NAME (payload: the key's JSON, empty for none) |
/// | `hub.ctl` | complete, fail and delete of any subject (`Hub-Op`, `Hub-Name` headers) |
/// | `hub.catalog` | each node's catalog, every catalog interval |
/// | `hub.h.NAME` | the values of the subject NAME with history: the JetStream stream `HUB_H_<hex of NAME>` |
/// | `$KV.hub_current.NAME` | the current value of the current-value subject NAME (JetStream key-value) |
///
/// A hub name is a NATS subject's tokens as it is, unless it has an empty token
/// (`a..b`, `a.`): such a name travels hex-encoded under `hub.vx.` / `hub.tx.`.
/// Every message carries the sending node's name in the header ``originHeader``.
public struct ClusterSubjectNames: Sendable, Hashable {
    /// The header naming the node a message comes from.
    public static let originHeader = "Hub-Node"
    /// The header of a control message naming its operation (`complete`, `fail`, `delete`).
    public static let operationHeader = "Hub-Op"
    /// The header of a control message naming its subject.
    public static let nameHeader = "Hub-Name"
    /// The header of a `complete` or `fail` of a subject with history: the last sequence
    /// of its stream before the end, which every node delivers before finishing.
    public static let throughHeader = "Hub-Through"

    /// The prefix of every subject.
    public let prefix: String

    /// The names under `prefix`.
    public init(prefix: String = "hub") {
        self.prefix = prefix
    }

    /// Where the values of the hub subject `name` travel.
    public func values(_ name: String) -> String { encoded(name, plain: "v", hex: "vx") }

    /// Where the activations of the trigger `name` travel.
    public func activations(_ name: String) -> String { encoded(name, plain: "t", hex: "tx") }

    /// The subject of the JetStream stream holding the history of the hub subject `name`
    /// (a subject with history, or a durable one, in a cluster).
    public func history(_ name: String) -> String { encoded(name, plain: "h", hex: "hx") }

    /// The name of the JetStream stream holding the history of the hub subject `name`:
    /// the prefix in capitals, `_H_`, and the name's UTF-8 in hex digits (a stream name
    /// allows no `.`, `*`, `>` or white space; hex keeps every hub name distinct).
    public func historyStream(_ name: String) -> String {
        let head = String(prefix.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
        return "\(head)_H_\(Self.hex(name))"
    }

    /// The NATS subject of the key `key` of the table subject `name` in its stream:
    /// `PREFIX.tk.<hex of NAME>.k<hex of KEY>`. A table's stream keeps the last message of
    /// each such subject (`max_msgs_per_subject: 1`, as NATS KV does), so that it holds one
    /// change per key however many updates it took. Both parts are hex, so that no key and
    /// no name can make a subject of another stream.
    public func tableKey(_ name: String, key: String) -> String { "\(prefix).tk.\(Self.hex(name)).k\(Self.hex(key))" }

    /// The subjects of every key of the table subject `name`: its stream's subject.
    public func tableKeys(_ name: String) -> String { "\(prefix).tk.\(Self.hex(name)).*" }

    /// Where complete, fail and delete travel.
    public var control: String { "\(prefix).ctl" }

    /// Where the nodes' catalogs travel.
    public var catalog: String { "\(prefix).catalog" }

    /// The key of the subject `name`'s current value in the key-value bucket: the name,
    /// or `=` and its hex digits when it has an empty token (`=` is no hub name's).
    public func currentValueKey(_ name: String) -> String {
        Self.isPlain(name) ? name : "=" + Self.hex(name)
    }

    private func encoded(_ name: String, plain: String, hex: String) -> String {
        Self.isPlain(name) ? "\(prefix).\(plain).\(name)" : "\(prefix).\(hex).\(Self.hex(name))"
    }

    private static func isPlain(_ name: String) -> Bool {
        !name.isEmpty && !name.hasSuffix(".") && !name.contains("..")
    }

    private static func hex(_ name: String) -> String {
        name.utf8.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}
