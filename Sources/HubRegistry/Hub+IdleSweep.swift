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

/// Forgetting the names created on first use that nobody uses any more.
extension Hub {
    /// Forgets the subjects and triggers created on first use (not declared, not system
    /// subjects) that have no subscriber and were not used since the previous sweep; the others are
    /// marked unused until their next use. Returns how many were forgotten. The service
    /// calls it every ``Configuration/idleNameTimeout``, so that names a client invents
    /// (100,000 unique `send`s, `subject("ns" + string(.))`) do not stay forever. A
    /// forgotten subject loses nothing a subscriber could see (a passthrough subject keeps
    /// no value) except a completion: the next use of the name starts it afresh. A
    /// forgotten trigger had no subscriber to see an activation.
    @discardableResult
    public func sweepIdleNames() -> Int {
        var forgotten = 0
        for (name, entry) in entries where !HubName.isSystem(name) {
            switch entry {
            case .subject(let subject) where !subject.isDeclared:
                if subject.wasUsed || subject.subscriberCount > 0 {
                    subject.wasUsed = false
                    continue
                }
                entries[name] = nil
                subject.isRemoved = true
                forgotten += 1
            case .trigger(let trigger) where !trigger.isDeclared:
                if trigger.wasUsed || trigger.subscriberCount > 0 {
                    trigger.wasUsed = false
                    continue
                }
                entries[name] = nil
                forgotten += 1
            default:
                continue
            }
        }
        return forgotten
    }
}
