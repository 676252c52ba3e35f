import Foundation
import HubLoop

/// What reaches a node from NATS, on libnats's delivery thread, handed to the hub's event
/// loop in one batch at a time and in arrival order.
///
/// Bounded: beyond ``capacity`` waiting messages (the loop is behind) further values are
/// dropped and counted (the cluster's passthrough delivery is at most once); changes of
/// the connection's state are always kept.
final class ClusterInbox: @unchecked Sendable {
    /// An event from NATS.
    enum Event: Sendable {
        /// A message that came on the subscription for `route`.
        case message(ClusterRoute, NATSMessage)
        /// The connection was made, lost or regained.
        case connection(ClusterNode.ConnectionState)
        /// Current values read from the key-value bucket.
        case currentValues([CurrentValueRead])
        /// A renewal of the running pipelines' leases.
        case leases(PipelineLeases.Outcome)
    }

    /// A current value read from the key-value bucket: the subject, the value's JSON (nil:
    /// none stored) and the subject's generation when the read began (a value sent or
    /// received since then is newer, and wins).
    struct CurrentValueRead: Sendable {
        let name: String
        let bytes: [UInt8]?
        let generation: UInt64
    }

    let capacity: Int
    private let eventLoop: any LoopExecutor
    private let lock = NSLock()
    private var events: [Event] = []
    private var isScheduled = false
    private var droppedCount = 0
    /// Runs on the loop with each batch (set once, before the first message can arrive).
    private let deliver: LoopBound<Deliverer>

    /// The loop side of the inbox: who gets the batches (the node, weakly held).
    final class Deliverer {
        var handle: (([Event]) -> Void)?
    }

    init(capacity: Int, eventLoop: any LoopExecutor, deliverer: Deliverer) {
        self.capacity = capacity
        self.eventLoop = eventLoop
        deliver = LoopBound(deliverer, eventLoop: eventLoop)
    }

    /// How many messages were dropped because the loop was behind.
    var dropped: Int { lock.withLock { droppedCount } }

    /// Adds `event` (any thread); the first of a batch schedules the loop's drain.
    func push(_ event: Event) {
        let schedule: Bool = lock.withLock {
            if case .message = event, events.count >= capacity {
                droppedCount += 1
                return false
            }
            events.append(event)
            defer { isScheduled = true }
            return !isScheduled
        }
        guard schedule else { return }
        eventLoop.execute { [self] in
            let batch: [Event] = lock.withLock {
                isScheduled = false
                defer { events.removeAll(keepingCapacity: true) }
                return events
            }
            deliver.value.handle?(batch)
        }
    }
}

/// Which subscription a message came on: the values of a subject, the activations of a
/// trigger, the control subject or the catalogs.
enum ClusterRoute: Sendable, Hashable {
    case values(String)
    case activations(String)
    case control
    case catalog
}
