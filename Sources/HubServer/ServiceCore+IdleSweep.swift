import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// The periodic sweep that forgets idle names.
extension ServiceCore {
    /// (Re)starts the sweep of idle names at the hub's `idleNameTimeout` (none when it is
    /// `nil`); a reload that keeps the interval keeps the running sweep.
    func scheduleIdleSweep() {
        let interval = hub.configuration.idleNameTimeout
        guard idleSweep == nil || interval != idleSweepInterval else { return }
        idleSweep.take()?.cancel()
        idleSweepInterval = interval
        guard let interval else { return }
        let scheduler = hub.scheduler
        idleSweep = scheduler.schedule(after: scheduler.now.advanced(by: interval), interval: interval) { [weak self] in
            guard let self else { return }
            let forgotten = self.hub.sweepIdleNames()
            if forgotten > 0 { self.logger.info("forgot idle names", metadata: ["count": "\(forgotten)"]) }
        }
    }
}
