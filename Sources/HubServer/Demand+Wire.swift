import HubEngine
import HubWire

extension Subscribers.Demand {
    /// The engine demand a client's `demand` or `request` grants.
    init(_ wire: WireDemand) {
        self = wire.count.map { .max($0) } ?? .unlimited
    }
}
