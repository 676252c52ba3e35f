import CWebsockets
import DequeModule
import Foundation
import Logging
import Synchronization

// Write coalescing: connections whose queues are written at the end of a service
// pass, or held for a moment while input keeps arriving (WriteCoalescing decides).
extension EventLoop {
    /// Writes `connection`'s queue at the end of the service pass (``WebSocketConnection/flush()``).
    @inline(__always)
    func scheduleFlush(_ connection: WebSocketConnection) {
        flushQueue.append(connection)
    }

    /// Notes that a message was queued for a connection (or an element of a coalescing
    /// one), here or through a ``LoopWriter``: how heavy a stream is decides how long its
    /// writes wait (``WriteCoalescing``). Must be called on the loop thread.
    @inline(__always)
    public func noteMessageQueued() {
        queuedMessages &+= 1
    }

    /// Writes at the end of this pass, whatever the coalescing: a connection has queued
    /// a full batch, and holding more back would only grow its queue; or what is queued
    /// was held back already (on another loop). Must be called on the loop thread.
    @inline(__always)
    public func writeAtEndOfPass() {
        flushPromptly = true
    }

    /// Makes `writer` write when this loop next writes what its connections queued: at
    /// the end of this pass, or later while a stream's writes are held back
    /// (``WriteCoalescing``), its ``LoopWriter/pendingConnections`` counting as
    /// connections waiting to be written. Once per write: a writer with more to write
    /// afterwards registers again. Must be called on the loop thread.
    public func writeWithConnections(_ writer: any LoopWriter) {
        preconditionInEventLoop()
        writers.append(writer)
    }

    /// Whether connections or writers wait for the loop's next write.
    var hasPendingWrites: Bool { !flushQueue.isEmpty || !writers.isEmpty }

    /// Connections waiting for the next write, the writers' included.
    var pendingConnections: Int {
        var count = flushQueue.count
        for writer in writers { count += writer.pendingConnections }
        return count
    }

    /// Decides after a pass that left writes pending whether to write now.
    func decideAfterPass(handledInput: Bool, now: Int64) -> WriteCoalescing.Decision {
        coalescing.afterPass(
            handledInput: handledInput, now: now, pendingConnections: pendingConnections, queuedMessages: queuedMessages,
            mustWrite: flushPromptly)
    }

    /// Writes the queues of the connections scheduled so far, then lets the writers write.
    /// Connections and writers scheduled while it runs (a handler that queues more when its
    /// queue drained) wait for the next pass.
    func flushConnections() {
        flushes &+= 1
        queuedMessages = 0
        flushPromptly = false
        swap(&flushQueue, &flushing)
        swap(&writers, &writing)
        for connection in flushing { connection.flush() }
        flushing.removeAll(keepingCapacity: true)
        for writer in writing { writer.write() }
        writing.removeAll(keepingCapacity: true)
    }
}
