import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

/// Current values kept in the JetStream key-value bucket.
extension ClusterNode {
    /// Reads the bucket's value of every current-value subject, off the loop; the
    /// results come back through the inbox.
    func readCurrentValues() {
        guard let bucket = configuration.currentValueBucket, let connection else { return }
        var wanted: [(name: String, key: String, generation: UInt64)] = []
        for (name, entry) in hub.allEntries {
            guard case .subject(let subject) = entry, subject.kind == .currentValue, subject.history == nil,
                  !HubName.isSystem(name)
            else { continue }
            wanted.append((name, names.currentValueKey(name), valueGenerations[name, default: 0]))
        }
        let (inbox, binding, logger, maxBytes) = (inbox, keyValue, logger, configuration.maxCurrentValueBytes)
        let reading = wanted
        worker.async {
            do {
                let store = try binding.bind(connection, bucket: bucket, maxValueBytes: maxBytes)
                var reads: [ClusterInbox.CurrentValueRead] = []
                for item in reading {
                    reads.append(.init(name: item.name, bytes: try store.get(item.key), generation: item.generation))
                }
                inbox.push(.currentValues(reads))
            } catch {
                logger.notice("current values not read from JetStream (is it enabled? nats-server -js)", metadata: [
                    "bucket": "\(bucket)", "error": "\(error)",
                ])
            }
        }
    }

    /// Applies the values read from the bucket that nothing newer has overtaken.
    func applyCurrentValues(_ reads: [ClusterInbox.CurrentValueRead]) {
        for read in reads where valueGenerations[read.name, default: 0] == read.generation {
            guard let bytes = read.bytes, let value = try? Value.parse(bytes),
                  case .subject(let subject) = hub.entry(named: read.name), subject.kind == .currentValue,
                  !subject.isCompleted, subject.history == nil, subject.currentValue != value
            else { continue }
            hub.applyingClusterEvent(to: read.name) { hub.publish(value, to: subject, sender: "cluster (current value)") }
        }
    }
}
