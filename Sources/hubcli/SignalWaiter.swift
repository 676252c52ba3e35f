import Dispatch
import Foundation

/// Waits for the first of some signals, with the process's default handling of them turned off.
enum SignalWaiter {
    /// Suspends until one of `signals` arrives and returns it.
    static func wait(for signals: [Int32]) async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let once = Once(continuation)
            let queue = DispatchQueue(label: "hubcli.signals")
            var sources: [DispatchSourceSignal] = []
            for number in signals {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { once.resume(number) }
                source.resume()
                sources.append(source)
            }
            once.keep(sources)
        }
    }

    /// Resumes a continuation once and keeps the signal sources alive until then.
    private final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Int32, Never>?
        private var sources: [DispatchSourceSignal] = []

        init(_ continuation: CheckedContinuation<Int32, Never>) { self.continuation = continuation }

        func keep(_ sources: [DispatchSourceSignal]) {
            lock.lock()
            self.sources = sources
            lock.unlock()
        }

        func resume(_ number: Int32) {
            lock.lock()
            let continuation = self.continuation
            self.continuation = nil
            let sources = self.sources
            self.sources = []
            lock.unlock()
            sources.forEach { $0.cancel() }
            continuation?.resume(returning: number)
        }
    }
}
