import HubValue

/// One value a subscription delivered, with where it stands in its subject's history:
/// what ``HubPublisher/entries`` publishes (`hubcli subscribe --offsets` prints it).
public struct HubEntry: Hashable, Sendable {
    /// The value.
    public var value: Value
    /// Its offset in the subject's history; `nil` for a name without history.
    public var offset: UInt64?
    /// The epoch its offset belongs to; `nil` for a name without history.
    public var epoch: String?

    /// An entry.
    public init(value: Value, offset: UInt64? = nil, epoch: String? = nil) {
        self.value = value
        self.offset = offset
        self.epoch = epoch
    }
}

/// What a remote subscription hands its subscriber: a bare `Value`, or a ``HubEntry``.
public protocol HubDelivery: Sendable {
    /// The delivery of `value` at `offset` of `epoch` (both `nil` without history).
    init(delivering value: Value, offset: UInt64?, epoch: String?)
}

extension Value: HubDelivery {
    /// The value alone.
    public init(delivering value: Value, offset: UInt64?, epoch: String?) { self = value }
}

extension HubEntry: HubDelivery {
    /// The value with its offset and epoch.
    public init(delivering value: Value, offset: UInt64?, epoch: String?) {
        self.init(value: value, offset: offset, epoch: epoch)
    }
}
