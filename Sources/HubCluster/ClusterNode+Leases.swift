import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

/// Running pipelines placed by leases: one node of the cluster runs each.
extension ClusterNode {
    /// Whether this node runs the running pipeline `name` now.
    func mayRun(_ name: String) -> Bool { !placesPipelines || heldLeases.contains(name) }

    var runningPipelines: [NamedPipeline] {
        hub.allEntries.compactMap { entry in
            guard case .pipeline(let pipeline) = entry.entry, pipeline.runs else { return nil }
            return pipeline
        }
    }

    /// Renews the leases, off the loop; the outcome comes back through the inbox.
    func renewLeases() {
        guard !isStopped, !isRenewing, let leases, let connection else { return }
        let names = runningPipelines.map(\.name)
        guard !names.isEmpty else { return }
        isRenewing = true
        let inbox = self.inbox
        worker.async { inbox.push(.leases(leases.renew(names, over: connection))) }
    }

    /// Starts the pipelines whose lease this node took, stops those whose lease it lost.
    func applyLeases(_ outcome: PipelineLeases.Outcome) {
        isRenewing = false
        let held: Set<String>
        switch outcome {
        case .held(let names):
            placesPipelines = true
            held = names
        case .unavailable(let reason):
            if placesPipelines {
                logger.warning("running pipelines run on every node: no JetStream for their leases (nats-server -js)", metadata: [
                    "error": "\(reason)",
                ])
            }
            placesPipelines = false
            held = Set(runningPipelines.map(\.name))
        case .failed(let reason):
            logger.debug("leases not renewed", metadata: ["error": "\(reason)"])
            return
        }
        let previous = heldLeases
        heldLeases = held
        for pipeline in runningPipelines {
            if held.contains(pipeline.name), !previous.contains(pipeline.name) {
                do {
                    try pipeline.start(in: hub)
                    logger.info("running pipeline placed here", metadata: ["pipeline": "\(pipeline.name)"])
                } catch {
                    logger.error("running pipeline cannot start", metadata: ["pipeline": "\(pipeline.name)", "error": "\(error)"])
                }
            } else if !held.contains(pipeline.name), previous.contains(pipeline.name) {
                // Another node resumes it from its last checkpoint: nothing more is committed here.
                pipeline.release()
                logger.notice("running pipeline's lease lost: stopped here", metadata: ["pipeline": "\(pipeline.name)"])
            }
        }
    }
}
