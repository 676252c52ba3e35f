import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

/// Listening in NATS to the names this node has local subscribers of, and only those.
extension ClusterNode {
    /// Reviews the subjects kept in JetStream: a replay that ended tells no one, so the
    /// node stops following a subject without subscribers at its next catalog interval.
    func reviewFollowing() {
        for (name, entry) in hub.allEntries {
            guard case .subject(let subject) = entry, subject.history != nil else { continue }
            reviewInterest(in: name)
        }
    }

    /// Listens to `name`'s values (or activations) in NATS when it has local subscribers
    /// (or is a current-value subject), and stops when it has none.
    func reviewInterest(in name: String) {
        guard !isStopped, let connection else { return }
        let route: ClusterRoute
        let wanted: Bool
        switch hub.entry(named: name) {
        case .subject(let subject):
            route = .values(name)
            wanted = subject.history == nil && (subject.subscriberCount > 0 || subject.kind == .currentValue)
            if let store = jetStreamStore(of: subject) {
                // Its values come from its stream, followed while it has subscribers here.
                do {
                    try store.setFollowing(subject.subscriberCount > 0 && !subject.isCompleted, subject: name)
                } catch {
                    logger.warning("cannot follow the subject's stream", metadata: ["subject": "\(name)", "error": "\(error)"])
                }
            }
        case .trigger(let trigger):
            route = .activations(name)
            wanted = trigger.subscriberCount > 0
        case .pipeline, nil:
            for route in [ClusterRoute.values(name), .activations(name)] { interest.removeValue(forKey: route)?.unsubscribe() }
            return
        }
        let other: ClusterRoute = route == .values(name) ? .activations(name) : .values(name)
        interest.removeValue(forKey: other)?.unsubscribe()
        if wanted, interest[route] == nil {
            let subject = route == .values(name) ? names.values(name) : names.activations(name)
            let inbox = self.inbox
            do {
                interest[route] = try connection.subscribe(to: subject) { inbox.push(.message(route, $0)) }
                logger.debug("listening", metadata: ["subject": "\(subject)"])
            } catch {
                logger.warning("cannot listen to the cluster", metadata: ["subject": "\(subject)", "error": "\(error)"])
            }
        } else if !wanted, let subscription = interest.removeValue(forKey: route) {
            subscription.unsubscribe()
            logger.debug("stopped listening", metadata: ["subject": "\(subscription.subject)"])
        }
    }
}
