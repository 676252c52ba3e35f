import Foundation
import HubCluster
import HubRegistry
import HubSQLite
import HubValue
import HubWire
import Logging
import NetworkTestSupport
import Synchronization
import Testing

/// A loop for the stores under test: a serial queue that every log call and every
/// completion runs on, as the hub's event loop does in the broker.
final class TestLoop: StoreExecutor {
    private let queue = DispatchQueue(label: "store-tests.loop")
    private let key = DispatchSpecificKey<Bool>()

    init() {
        queue.setSpecific(key: key, value: true)
    }

    /// Whether the caller runs on the loop's queue.
    var inEventLoop: Bool { DispatchQueue.getSpecific(key: key) == true }

    func execute(_ work: @Sendable @escaping () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `body` on the loop and returns its result.
    func run<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the loop; it calls its argument once, maybe later on the loop.
    func callback<T: Sendable>(_ body: @Sendable @escaping (@escaping (T) -> Void) -> Void) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { body { continuation.resume(returning: $0) } }
        }
    }
}

/// A loop-confined object carried across the test's tasks (used on ``TestLoop`` only).
struct Confined<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A calendar clock the tests move by hand.
final class ManualClock: Sendable {
    private let nanoseconds = Atomic<Int64>(1_700_000_000_000_000_000)

    var clock: HistoryClock { { [self] in self.nanoseconds.load(ordering: .relaxed) } }

    func advance(by duration: Duration) {
        _ = nanoseconds.wrappingAdd(duration.nanoseconds, ordering: .relaxed)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}

/// The stores every conformance test runs against: memory, SQLite, and the cluster's
/// JetStream store over a real `nats-server -js` on 127.0.0.1 (file and memory streams).
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case jetstreamFile = "jetstream-file"
    case jetstreamMemory = "jetstream-memory"

    var testDescription: String { rawValue }

    /// Whether history, last value and epoch survive a restart of the store (a
    /// JetStream stream, in file or memory storage, outlives the hub that opened it).
    var isDurable: Bool { self != .memory }

    func makeFixture() async throws -> StoreFixture { try await StoreFixture(kind: self) }
}

/// One store under test, on its own loop and manual clock; ``restart()`` closes it and
/// opens it again as a restarted broker would (same directory for the SQLite store, same
/// NATS server and a new connection for the JetStream store).
final class StoreFixture: @unchecked Sendable {
    let kind: StoreKind
    let loop = TestLoop()
    let clock = ManualClock()
    private let directory: String
    private let nats: NATSServerProcess?
    private var connection: NATSConnection?
    private(set) var store: Confined<any SubjectStore>

    init(kind: StoreKind) async throws {
        self.kind = kind
        directory = NSTemporaryDirectory() + "hub-store-tests-" + UUID().uuidString
        switch kind {
        case .jetstreamFile, .jetstreamMemory: nats = try await NATSServerProcess(jetStream: true)
        case .memory, .sqlite: nats = nil
        }
        store = Confined(MemoryStore(clock: clock.clock))
        store = Confined(try makeStore())
    }

    private func makeStore() throws -> any SubjectStore {
        switch kind {
        case .memory:
            return MemoryStore(clock: clock.clock)
        case .sqlite:
            return try SQLiteStore(directory: directory, sync: .normal, executor: loop, clock: clock.clock)
        case .jetstreamFile, .jetstreamMemory:
            guard let nats else { throw TimedOut(what: "a NATS server") }
            connection?.close()
            let logger = Logger(label: "store-tests.jetstream")
            var options = NATSConnection.Options(urls: [nats.url], name: "store-tests")
            options.sendImmediately = true
            let connection = try NATSConnection(options: options, logger: logger)
            self.connection = connection
            return try JetStreamStore(
                connection: connection, storage: kind == .jetstreamFile ? .file : .memory,
                executor: loop, clock: clock.clock, logger: logger)
        }
    }

    /// Opens the log of `subject` on the loop.
    func open(_ subject: String, _ retention: HistoryRetention = HistoryRetention()) async throws -> Confined<any SubjectLog> {
        let store = self.store
        return try await loop.run { Confined(try store.value.openLog(subject: subject, retention: retention)) }
    }

    /// Closes the store and opens a new one over the same files.
    func restart() async throws {
        let old = store
        try await loop.run { old.value.close() }
        store = Confined(try makeStore())
    }

    /// Closes the store and removes its files.
    func tearDown() async {
        let store = self.store
        _ = try? await loop.run { store.value.close() }
        connection?.close()
        nats?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension Confined where T == any SubjectLog {
    /// Appends on the loop; returns the completion's result.
    func append(_ value: Value, on loop: TestLoop) async -> Result<UInt64, HubError> {
        await loop.callback { done in self.value.append(value) { done($0) } }
    }

    /// Reads one page on the loop.
    func read(
        after: UInt64, through: UInt64 = .max, limit: Int = 1000, maxBytes: Int = 1 << 20, on loop: TestLoop
    ) async throws -> [HistoryEntry] {
        let result: Result<[HistoryEntry], HubError> = await loop.callback { done in
            self.value.read(after: after, through: through, limit: limit, maxBytes: maxBytes) { done($0) }
        }
        return try result.get()
    }

    /// The epoch, last offset and last value, read on the loop.
    func position(on loop: TestLoop) async throws -> (epoch: String, lastOffset: UInt64, lastValue: Value?) {
        try await loop.run { (self.value.epoch, self.value.lastOffset, self.value.lastValue) }
    }
}
