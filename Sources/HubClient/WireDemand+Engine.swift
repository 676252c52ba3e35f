import HubEngine
import HubWire

extension WireDemand {
    /// The wire form of a demand a subscriber requested.
    init(_ demand: Subscribers.Demand) {
        self = demand.max.map { .max($0) } ?? .unlimited
    }
}
