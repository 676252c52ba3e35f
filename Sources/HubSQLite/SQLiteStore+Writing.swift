import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

/// The logs' appends: queued for the loop's group commit or the writer thread, and their
/// outcomes; the store's unavailability while the disk refuses commits.
extension SQLiteStore {
    /// Queues `value` for the next group commit; refused when too much is waiting already.
    func append(_ value: Value, for log: SQLiteLog) throws(HubError) -> Int {
        guard !closed else { throw HubError(.internal, "the durable store is closed") }
        guard !log.isRetired else { throw HubError(.completed, "the subject was deleted: its history is gone") }
        let bytes = value.estimatedBytes
        // A pipeline's commit is not refused by halves: its values go in with it (the
        // pipeline bounds how many it gathers).
        guard pendingBytes + bytes <= maxPendingBytes || pendingBytes == 0 || transaction != nil else {
            throw HubError(
                .limitExceeded, "the durable store is behind: \(pendingBytes) bytes are waiting for the disk",
                data: ["limit": .int(Int64(maxPendingBytes))])
        }
        pendingBytes += bytes
        enqueue(.append(subject: log.id, value: value), bytes: bytes)
        return bytes
    }

    /// Queues `operation` for the writer: for the loop's commit after this pass
    /// (``commitsOnLoop``), or for the thread.
    func enqueue(_ operation: SQLiteWriter.Operation, bytes: Int = 0) {
        if transaction != nil {
            transaction!.append(operation)
            transactionBytes += bytes
            return
        }
        guard commitsOnLoop else {
            submit([operation], appends: operation.isAppend ? 1 : 0)
            return
        }
        loopGroup.append(operation)
        loopGroupBytes += bytes
        guard !loopCommitScheduled else { return }
        loopCommitScheduled = true
        executor.executeAtEndOfPass { [box] in box.store?.commitLoopGroup() }
    }

    /// After the pass: commits what it queued on the loop, if the writer is idle (the
    /// acks go out at the end of this pass), or hands it to the writer thread.
    ///
    /// The loop commits a group of one value at most: a lone publisher waiting for its
    /// ack. A pass that appended several comes from values streaming in (a pipelining
    /// publisher, many publishers), and the thread commits those, gathering what arrives
    /// during each commit into the next group while the loop goes on reading: a commit
    /// per pass on the loop made groups small and commits many (window 64 of
    /// bench-durable-vs-jetstream, 1-KiB values: 0.47-0.54x JetStream against 0.62x).
    /// Such a group goes to the thread from the loop's next pass
    /// (``StoreExecutor/executeSoon(_:)``), with what that pass appended before it.
    /// Handed over at the end of its own pass, it made throughput lower at window 64 with
    /// 64-B values (75-80 k/s against 88-91 k/s); waiting for the end of the next pass
    /// made one group of the whole window (the publisher waiting on every commit of 64
    /// values: 0.72-0.84x JetStream against 0.88-1.07x).
    func commitLoopGroup() {
        loopCommitScheduled = false
        guard !closed, !loopGroup.isEmpty else { return }
        let values = loopGroup.count(where: \.isAppend)
        if values > 1 {
            loopCommitScheduled = true
            executor.executeSoon { [box] in box.store?.handOverLoopGroup() }
            return
        }
        let bytes = loopGroupBytes
        let group = takeLoopGroup()
        if bytes <= SQLiteStore.maxLoopGroupBytes, appendsWithThread == 0, let outcomes = writer.commitOnLoop(group) {
            loopCommits += 1
            committed(outcomes)
            // The acks go out now: the pass read the value, so write coalescing would
            // hold them for the next pass, which only polls.
            executor.answered()
        } else {
            submit(group, appends: values)
        }
    }

    /// From the loop's next pass: hands the group of several values, with what that pass
    /// appended before, to the writer thread.
    func handOverLoopGroup() {
        loopCommitScheduled = false
        guard !closed else { return }
        submitLoopGroup()
    }

    /// Hands what the loop queued, if anything, to the writer thread.
    func submitLoopGroup() {
        guard !loopGroup.isEmpty else { return }
        let group = takeLoopGroup()
        submit(group, appends: group.count(where: \.isAppend))
    }

    /// The operations queued on the loop, which start over empty.
    func takeLoopGroup() -> [SQLiteWriter.Operation] {
        defer {
            loopGroup = []
            loopGroupBytes = 0
        }
        return loopGroup
    }

    /// Hands `group`, with `appends` values in it, to the writer thread, counting them
    /// until their outcomes return.
    func submit(_ group: [SQLiteWriter.Operation], appends: Int) {
        appendsWithThread += appends
        writer.submit(group)
    }

    /// The outcomes of a group the writer thread committed.
    func threadCommitted(_ outcomes: [SQLiteWriter.Outcome]) {
        appendsWithThread -= outcomes.count(where: \.isAppend)
        committed(outcomes)
    }

    /// A group committed (or failed): each log completes its oldest pending appends.
    func committed(_ outcomes: [SQLiteWriter.Outcome]) {
        for outcome in outcomes {
            switch outcome {
            case let .appended(subject, offset):
                unavailableReason = nil
                if let bytes = byID[subject]?.committed(offset: offset) { pendingBytes -= bytes }
            case let .failed(subject, error):
                let log = byID[subject]
                noteFailure(error)
                let hubError = error.hubError
                let named = HubError(hubError.code, "subject '\(log?.name ?? "?")': \(hubError.message)", data: hubError.data)
                if let bytes = log?.failed(named) { pendingBytes -= bytes }
            case let .checkpointed(pipeline, error):
                // A checkpoint the disk refused makes the store unavailable as an append would.
                if let error { noteFailure(error) } else { unavailableReason = nil }
                checkpointed(pipeline, error)
                continue
            case let .probed(error):
                probing = false
                if let error { noteFailure(error) } else { unavailableReason = nil }
                continue
            }
            // A removed log is forgotten once its last append has completed.
            if let subject = outcome.subject, let log = byID[subject], log.isRetired, log.isSettled { byID[log.id] = nil }
        }
    }

    /// A failed commit: the disk's or the file's failure makes the store unavailable
    /// until a commit succeeds.
    func noteFailure(_ error: SQLiteError) {
        guard let problem = error.storageProblem else { return }
        unavailableReason = "\(problem) (\(error.description))"
        unavailableSince = DispatchTime.now().uptimeNanoseconds
    }

    /// While the store is unavailable: has the writer try a small commit, at most once a
    /// second, so that the store becomes available again without a publisher's value
    /// (``unavailableReason`` is cleared when it succeeds). Call it where readiness is asked.
    public func probeIfUnavailable() {
        guard !closed, unavailableReason != nil, !probing else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- lastProbe >= 1_000_000_000 else { return }
        lastProbe = now
        probing = true
        submit([.probe], appends: 0)
    }

    /// ``unavailableReason``, after ``probeIfUnavailable()``.
    public func unavailability() -> String? {
        probeIfUnavailable()
        return unavailableReason
    }
}
