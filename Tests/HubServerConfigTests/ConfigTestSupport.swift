import HubRegistry
import HubEngine
import HubValue
import HubWire
import HubServer
import HubSQLite

/// A subscriber of hub values that records what it receives and lets a test grant demand.
final class ValueRecorder: Subscriber {
    typealias Input = Value
    typealias Failure = HubError

    enum Event: Equatable {
        case value(Value)
        case finished
        case failure(HubError.Code)
    }

    private(set) var events: [Event] = []
    private var subscription: (any Subscription)?
    private let initialDemand: Subscribers.Demand

    init(demand: Subscribers.Demand = .none) { initialDemand = demand }

    var values: [Value] {
        events.compactMap { if case .value(let value) = $0 { return value } else { return nil } }
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        events.append(.value(input))
        return .none
    }

    func receive(completion: Subscribers.Completion<HubError>) {
        switch completion {
        case .finished: events.append(.finished)
        case .failure(let error): events.append(.failure(error.code))
        }
    }

    func request(_ demand: Subscribers.Demand) { subscription?.request(demand) }

    func cancel() { subscription?.cancel() }
}

/// Parses `yaml` as `hub.yml` and returns the error's description, or nil when it parses.
func parseError(_ yaml: String) -> String? {
    do {
        _ = try parseBroker(yaml: yaml, file: "hub.yml")
        return nil
    } catch {
        return error.description
    }
}

/// Parses `yaml` and declares it in a scratch hub; returns the error's description, or nil.
func declareError(_ yaml: String) -> String? {
    do {
        try parseBroker(yaml: yaml, file: "hub.yml").check()
        return nil
    } catch {
        return error.description
    }
}

/// A hub with `yaml` declared, on an immediate scheduler.
func configuredHub(_ yaml: String) throws -> Hub {
    let configuration = try parseBroker(yaml: yaml, file: "hub.yml")
    let hub = Hub(configuration: configuration.service.hub, scheduler: ImmediateScheduler.shared)
    try configuration.declare(in: hub)
    return hub
}

/// `BrokerConfiguration.parse(yaml:file:)` as `hubcli serve` reads a file: its `storage`
/// section describes an SQLite store.
func parseBroker(yaml: String, file: String = "hub.yml") throws(ConfigurationError) -> BrokerConfiguration {
    try BrokerConfiguration.parse(yaml: yaml, file: file, storage: SQLiteStorage.self)
}

/// `BrokerConfiguration.load(contentsOf:)` as `hubcli serve` reads a file.
func loadBroker(contentsOf path: String) throws(ConfigurationError) -> BrokerConfiguration {
    try BrokerConfiguration.load(contentsOf: path, storage: SQLiteStorage.self)
}
