import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// Ending the service: a lame-duck drain, and the stop that ends every session.
extension ServiceCore {
    /// Starts a lame-duck drain: upgrades refused, `/ready` 503, and the sessions ended
    /// with 1012 in up to 20 batches spread over `grace`. Once every connection has
    /// closed (or at `grace` plus the sessions' close timeout), the drain is finished:
    /// ``whenDrained(_:)`` callers run (``HubService/run()`` returns and stops the service).
    func drain(grace: Duration?, requestedBy: String) -> Bool {
        guard !stopped, !isDraining, server != nil else { return false }
        isDraining = true
        let grace = grace ?? configuration.drainGrace
        server?.stopAccepting()
        adminServer?.stopAccepting()
        for loop in connectionLoops { loop.onServer { $0.stopAccepting() } }
        let live = handlers.values.filter { $0.session.map { !$0.isClosed } ?? false }
        logger.notice(
            "draining", metadata: ["grace": "\(grace)", "connections": "\(live.count)", "requested_by": "\(requestedBy)"])
        counters.emit("drain", ["connections": .int(Int64(live.count)), "requestedBy": .string(requestedBy)])
        let batches = max(1, min(live.count, 20))
        let step = grace / batches
        let scheduler = hub.scheduler
        for batch in 0..<batches {
            let members = stride(from: batch, to: live.count, by: batches).map { live[$0] }
            let close = { for handler in members { handler.session?.drain() } }
            if batch == 0 {
                close()
            } else {
                _ = scheduler.schedule(after: scheduler.now.advanced(by: step * batch), close)
            }
        }
        if handlers.isEmpty {
            finishDrain()
        } else {
            let deadline = scheduler.now.advanced(by: grace + configuration.session.closeTimeout)
            _ = scheduler.schedule(after: deadline) { [weak self] in self?.finishDrain() }
        }
        return true
    }

    /// Runs `action` once the drain has finished (at once if it has).
    func whenDrained(_ action: @escaping () -> Void) {
        if drainFinished { action() } else { drainedWaiters.append(action) }
    }

    func finishDrain() {
        guard isDraining, !drainFinished else { return }
        drainFinished = true
        logger.notice("drained", metadata: ["connections": "\(handlers.count)"])
        let waiters = drainedWaiters
        drainedWaiters = []
        for waiter in waiters { waiter() }
    }

    /// Ends every session (their subscriptions' `shutting_down` go out before the close
    /// frames) and closes the listener; `whenDrained` runs once the last connection has
    /// closed, or `grace` from now if some are still open then.
    func stop(grace: Duration, whenDrained: @escaping () -> Void) {
        if !stopped {
            stopped = true
            lagMonitor.stop()
            idleSweep.take()?.cancel()
            system?.stop()
            counters.eventSink = nil
            hub.onNamedPipelineFailure = nil
            let live = handlers.values
            for handler in live { handler.session?.shutDown() }
            hub.stopRunningPipelines()
            let goingAway = WebSocketCloseCode(HubCloseCode.goingAway.rawValue)
            server?.close(code: goingAway, reason: "server shutting down", discardingQueued: false)
            adminServer?.close(code: goingAway, reason: "server shutting down", discardingQueued: false)
            for loop in connectionLoops {
                loop.onServer { $0.close(code: goingAway, reason: "server shutting down", discardingQueued: false) }
            }
            logger.info("stopped")
        }
        drainWaiters.append(whenDrained)
        if handlers.isEmpty {
            drained()
        } else {
            _ = hub.scheduler.schedule(after: hub.scheduler.now.advanced(by: grace)) { [weak self] in self?.drained() }
        }
    }

    func drained() {
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter() }
    }
}
