import HubEngine
import Synchronization

/// Measures how late the event loop runs a timer: a timer due ``interval`` after the
/// previous one ran notes how long after its due time it runs. A loop kept busy by one long callback (a
/// heavy pipeline, a huge message) shows here before clients notice.
///
/// Confined to the loop; ``takeWindow(for:)`` returns the largest lag since that
/// consumer's previous call and the samples taken meanwhile (bounded).
final class LoopLagMonitor {
    /// Who reads the lag: each has its own window.
    enum Consumer: Int, CaseIterable {
        /// `/metrics`.
        case metrics
        /// `$sys.stats`.
        case stats
    }

    /// The largest lag a loop's monitor saw since the last ``take()``, readable from
    /// another thread (a connection loop's, read by the hub's loop for `/metrics`).
    final class SharedMaximum: Sendable {
        private let nanoseconds = Atomic<Int64>(0)

        init() {}

        /// Notes one sample.
        func record(_ lag: Duration) {
            nanoseconds.max(lag.nanosecondsForMetrics, ordering: .relaxed)
        }

        /// The largest lag since the previous call.
        func take() -> Duration {
            .nanoseconds(nanoseconds.exchange(0, ordering: .relaxed))
        }
    }

    /// How often the loop is probed.
    let interval: Duration
    /// Where each sample goes too, when another thread reads this loop's lag.
    private let shared: SharedMaximum?
    private let scheduler: any Scheduler
    private var timer: (any Cancellable)?
    private var running = false
    private var maximum = [Duration](repeating: .zero, count: Consumer.allCases.count)
    private var samples = [[Duration]](repeating: [], count: Consumer.allCases.count)
    /// The most samples kept between two windows.
    private static let sampleLimit = 1024

    init(scheduler: any Scheduler, interval: Duration = .milliseconds(250), shared: SharedMaximum? = nil) {
        self.scheduler = scheduler
        self.interval = interval
        self.shared = shared
    }

    /// Starts probing.
    func start() {
        guard !running else { return }
        running = true
        arm()
    }

    /// Stops probing.
    func stop() {
        running = false
        timer?.cancel()
        timer = nil
    }

    private func arm() {
        let due = scheduler.now.advanced(by: interval)
        timer = scheduler.schedule(after: due) { [weak self] in self?.tick(due: due) }
    }

    private func tick(due: SchedulerTime) {
        guard running else { return }
        let lag = max(.zero, due.distance(to: scheduler.now))
        shared?.record(lag)
        for index in maximum.indices {
            maximum[index] = max(maximum[index], lag)
            if samples[index].count < LoopLagMonitor.sampleLimit { samples[index].append(lag) }
        }
        arm()
    }

    /// The largest lag and the samples since `consumer`'s previous call.
    func takeWindow(for consumer: Consumer) -> (maximum: Duration, samples: [Duration]) {
        let index = consumer.rawValue
        defer {
            maximum[index] = .zero
            samples[index].removeAll(keepingCapacity: true)
        }
        return (maximum[index], samples[index])
    }
}
