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

/// What the hub tells its cluster, and how it applies events from the other nodes.
extension Hub {
    /// Runs `body` as the application of an event from another node of the cluster to the
    /// subject or trigger `name`: what it publishes into, completes, deletes or activates
    /// of `name` is not sent back to the cluster. (What it causes elsewhere, such as a
    /// pipeline's `into` another subject, is this node's doing and is sent.)
    public func applyingClusterEvent<T>(to name: String, _ body: () throws -> T) rethrows -> T {
        let previous = clusterEventName
        clusterEventName = name
        defer { clusterEventName = previous }
        return try body()
    }

    /// `publisher`, telling the cluster link (when there is one) when a subscription to
    /// `name` begins and ends, so that the node listens to the name's values from other
    /// nodes only while it has subscribers of its own.
    func watchingInterest(
        in name: String, _ publisher: AnyPublisher<Value, HubError>
    ) -> AnyPublisher<Value, HubError> {
        guard clusterLink != nil, !HubName.isSystem(name) else { return publisher }
        let changed: () -> Void = { [weak self] in
            guard let self, let link = self.clusterLink else { return }
            link.hub(self, interestMayHaveChangedIn: name)
        }
        return publisher
            .handleEvents(
                receiveSubscription: { _ in changed() }, receiveCompletion: { _ in changed() },
                receiveCancel: { changed() })
            .eraseToAnyPublisher()
    }
}
