import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

/// Running pipelines' checkpoints, committed with the appends they cover.
extension SQLiteStore {
    /// The pipeline's last checkpoint stored, once the commits under way for it are done.
    public func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void) {
        guard committing[pipeline]?.isEmpty ?? true else {
            loadsWaiting[pipeline, default: []].append(completion)
            return
        }
        completion(.success(pipelineCheckpoints[pipeline]))
    }

    /// Gathers the appends `body` makes and `checkpoint` into one group of the writer: one
    /// transaction (see ``SQLiteWriter``: a group is committed whole or not at all).
    public func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void
    ) {
        guard !closed, transaction == nil else {
            completion(.failure(HubError(.internal, closed ? "the durable store is closed" : "a commit inside another")))
            return
        }
        transaction = []
        transactionBytes = 0
        body()
        var operations = transaction ?? []
        let bytes = transactionBytes
        transaction = nil
        var json: [UInt8] = []
        checkpoint.writeJSON(into: &json)
        operations.append(.checkpoint(pipeline: pipeline, state: json))
        committing[pipeline, default: []].append((checkpoint, completion))
        guard commitsOnLoop else {
            submit(operations, appends: operations.count(where: \.isAppend))
            return
        }
        loopGroup.append(contentsOf: operations)
        loopGroupBytes += bytes
        guard !loopCommitScheduled else { return }
        loopCommitScheduled = true
        executor.executeAtEndOfPass { [box] in box.store?.commitLoopGroup() }
    }

    /// A checkpoint's outcome: its completion, then the loads that waited for it.
    func checkpointed(_ pipeline: String, _ error: SQLiteError?) {
        guard let (checkpoint, completion) = committing[pipeline]?.popFirst() else { return }
        if committing[pipeline]?.isEmpty == true { committing[pipeline] = nil }
        if let error {
            completion(.failure(error.hubError))
        } else {
            pipelineCheckpoints[pipeline] = checkpoint
            completion(.success(()))
        }
        guard committing[pipeline] == nil, let waiting = loadsWaiting.removeValue(forKey: pipeline) else { return }
        for load in waiting { load(.success(pipelineCheckpoints[pipeline])) }
    }
}
