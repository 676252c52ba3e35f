import FuzzDriver
import HubEngine
import HubPipeline
import HubRegistry
import HubTesting
import HubValue
import HubWire

// Pipeline text as a client sends it: parsed and compiled by a hub with the broker's
// default limits and a connection's budget; what compiles is subscribed to with demand
// and run for two seconds of virtual time, then cancelled. An error, values or a
// completion, never a crash or a hang (libFuzzer's -timeout catches hangs).
runFuzzer { bytes in
    let text = String(decoding: bytes, as: UTF8.self)
    let scheduler = TestScheduler()
    let hub = Hub(scheduler: scheduler, wallClock: { scheduler.now })
    let budget = ResourceBudget(owner: "fuzz", limits: .connection, clock: { scheduler.now })
    guard let publisher = try? hub.compile(pipeline: text, budget: budget) else { return }
    let subscriber = RecordingSubscriber<Value, HubError>(initialDemand: .max(100), demandPerValue: .max(1))
    publisher.subscribe(subscriber)
    scheduler.advance(by: .seconds(2))
    subscriber.cancel()
    scheduler.advance(by: .seconds(1))
}
