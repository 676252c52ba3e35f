import Foundation
import HubClient
import HubEngine
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `hubcli serve --port 0 --cluster URL --node NAME` process: one node of a test cluster.
final class NodeProcess: @unchecked Sendable {
    let name: String
    let process = ChildProcess()
    private(set) var port = 0
    private let output = NodeOutput()
    private let stderrChunks = EventQueue<String>()
    private let exited = EventQueue<Int32>()

    /// Starts the node and waits for its listening line.
    init(name: String, natsURL: String, extraArguments: [String] = []) async throws {
        self.name = name
        process.executableURL = try HubCLIExecutable.locate()
        process.arguments = ["serve", "--port", "0", "--cluster", natsURL, "--node", name] + extraArguments
        let errPipe = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [exited] process in exited.push(process.terminationStatus) }
        try process.run()
        ChildProcesses.killAtExit(process.processIdentifier)
        let errHandle = errPipe.fileHandleForReading
        // The reader holds what it fills, not the node: the node's deinit (which kills a
        // node still running) is not held back by its own output.
        Thread.detachNewThread { [output, stderrChunks] in
            while case let data = errHandle.availableData, !data.isEmpty {
                output.append(data)
                stderrChunks.push(String(decoding: data, as: UTF8.self))
            }
        }
        port = try await listeningPort()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Standard error so far.
    var stderr: String { output.text }

    private func listeningPort(timeout: Duration = .seconds(30)) async throws -> Int {
        var seen = ""
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if let range = seen.range(of: "hubcli: listening on ws://127.0.0.1:") {
                let digits = seen[range.upperBound...].prefix { $0.isNumber }
                if seen[range.upperBound...].dropFirst(digits.count).hasPrefix("/"), let port = Int(digits) { return port }
            }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "node \(name)'s listening line, got: \(seen)") }
            seen += try await stderrChunks.next(timeout: left, "node \(name)'s output")
        }
    }

    /// A client of this node.
    func client() async throws -> HubClient {
        let client = try HubClient(url: "ws://127.0.0.1:\(port)/", configuration: HubClient.Configuration(
            connectTimeout: .seconds(5), requestTimeout: .seconds(10), reconnect: .disabled))
        try await client.connect()
        return client
    }

    /// `/metrics`' text.
    func metrics() async throws -> String {
        try await HTTPTestClient.request(port: port, path: "/metrics").text
    }

    /// `/ready`'s status and body.
    func ready() async throws -> (status: Int, text: String) {
        let response = try await HTTPTestClient.request(port: port, path: "/ready")
        return (response.status, response.text)
    }

    /// Stops the node (SIGTERM) and waits for its exit status.
    func stop(timeout: Duration = .seconds(10)) async throws -> Int32 {
        process.terminate()
        return try await exited.next(timeout: timeout, "node \(name) to exit")
    }
}

/// A node's standard error, filled by its reader thread.
final class NodeOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}

/// Waits until `condition` holds, asking again every 20 ms until `timeout`; the error names `what`.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(15), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while try await !condition() {
        guard clock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Subscribes a recorder to `name` on `client`.
func record(_ name: String, on client: HubClient, demand: Subscribers.Demand = .unlimited) -> Recorder {
    let recorder = Recorder(demand: demand)
    client.subscribe(to: name).subscribe(recorder)
    return recorder
}

/// The subscriber count of the subject `name` in `client`'s `list` (0 when absent).
func subscribers(of name: String, via client: HubClient) async throws -> Int {
    let catalog = try await client.list()
    return catalog.subjects.first { $0.name == name }?.subscribers
        ?? catalog.triggers.first { $0.name == name }?.subscribers ?? 0
}
