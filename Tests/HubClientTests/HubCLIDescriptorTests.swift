import Foundation
import HubClient
import HubValue
import NetworkTestSupport
import Testing

/// Descriptor exhaustion, on a real `hubcli serve` under a small descriptor limit:
/// sockets that connect and never send their upgrade used to take every descriptor
/// (1,100 of them under `ulimit -n 1024`); `accept` then failed with EMFILE on every
/// pass, the loop spun at 100 % and logged tens of thousands of `accept: errno 24`
/// lines, and real clients were starved. The broker now keeps its sockets within its
/// descriptors (a quarter for sockets waiting for their handshake, the oldest closed
/// right after the pass that displaced them), so `accept` runs out at most for a
/// moment in a burst, and never spins.
@Suite("hubcli serve under a descriptor limit")
struct HubCLIDescriptorTests {
    /// User and system CPU seconds of process `pid`.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A child that opens N sockets to 127.0.0.1:PORT, sends nothing, says "holding N" on
    /// standard error, holds them for SECONDS, then prints how many the broker closed and
    /// exits (not at a signal: a child of the test process may inherit it blocked).
    static let holdSockets = """
        import socket, sys, time
        port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
        socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(count)]
        print(f"holding {count}", file=sys.stderr, flush=True)
        time.sleep(seconds)
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                closed += s.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        print(f"closed by the broker: {closed}", flush=True)
        """

    @Test func silentSocketsBeyondTheDescriptorLimitNeitherSpinNorStarveClients() async throws {
        let hubcli = try HubCLIExecutable.locate()
        // `ulimit -n` sets the hard limit too: hubcli cannot raise it.
        let server = try RunningProcess(
            HubCLIShellTests.bash, ["-c", #"ulimit -n 256 && exec "$0" serve --port 0 --log-level warning"#, hubcli.path],
            environment: HubCLIShellTests.clean)
        defer { server.process.terminate() }
        let port = try await server.port()
        let pid = server.process.processIdentifier

        // 400 sockets that send nothing: more than the broker's 256 descriptors. They are
        // held by a child process: a test process with hundreds of sockets open crashed
        // Foundation's Process.run() in another test starting a process meanwhile.
        let silent = try RunningProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.holdSockets, String(port), "400", "6"])
        defer { silent.process.terminate() }
        _ = try await silent.waitForStderr(containing: "holding 400", timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(300))  // let the broker take them in
        let before = try Self.cpuSeconds(pid)
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(2))
        let used = try Self.cpuSeconds(pid) - before
        let elapsed = ContinuousClock.now - started
        // A spinning loop uses the whole 2 s; an idle one next to nothing.
        #expect(used < 0.5 * (Double(elapsed.components.seconds) + 0.1), "broker CPU \(used) s in \(elapsed)")

        // A real client gets in and is served while the silent ones are still connecting.
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        try await client.send(1, to: "alive")
        #expect(try await client.list().subjects.contains { $0.name == "alive" })
        await client.close()

        // The oldest were closed to make room.
        let held = try await silent.finish(timeout: .seconds(30))
        #expect(held.stdout.contains("closed by the broker:") && !held.stdout.contains("closed by the broker: 0\n"), "\(held.stdout)")
        server.process.terminate()
        let result = try await server.finish()
        // At most the odd EMFILE while a burst of accepts outruns the closing of the
        // displaced sockets, and no "(N more of: accept: errno 24)" of a spinning loop.
        let emfile = result.stderr.components(separatedBy: "errno 24").count - 1
        #expect(emfile <= 5 && !result.stderr.contains("more of: accept"), "\(result.stderr.prefix(2000))")
    }
}
