import Foundation
import HubClient
import HubWire
import NetworkTestSupport
import Testing

/// docs/getting-started.md and the README's quick start run as they are shown: their
/// shell blocks marked with an HTML comment run against a real `hubcli serve` on an
/// ephemeral port, and what each command prints is what the page shows
/// (docs/contributing.md, "Docs that cannot rot").
///
/// - `<!-- terminal N -->`: each `$ command` runs to its exit with status 0; the lines
///   after it are its standard output, then its standard error, exactly.
/// - `<!-- terminal N: keeps running -->`: the command starts and keeps running (the
///   terminal's previous command is stopped first, as with Ctrl-C); the lines shown must
///   appear in its output in that order (log lines may come between); a client command
///   counts as started once the broker counts its subscription.
/// - `<!-- terminal N prints -->`: the next lines the running command of terminal N
///   prints on standard output.
///
/// `hubcli serve` gets `--port 0`, the other commands `HUB_URL` of that broker, and
/// `127.0.0.1:7420` in the page stands for its address.
@Suite("Getting started page")
struct GettingStartedTests {
    /// A marked block of the page.
    struct Step: Equatable {
        enum Kind: Equatable {
            case run
            case keepsRunning
            case prints
        }

        var kind: Kind
        var terminal: Int
        /// Each command with the lines the page shows after it (for `prints`: one entry
        /// with an empty command).
        var commands: [Command]
        /// The block's first line in the page.
        var line: Int
    }

    struct Command: Equatable {
        var text: String
        var output: [String]
    }

    /// The marked blocks of `markdown`, in order.
    static func steps(in markdown: String) throws -> [Step] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let marker = try Regex(#"^<!-- terminal (\d+)(: keeps running| prints)? -->$"#)
        var steps: [Step] = []
        var index = 0
        while index < lines.count {
            guard let match = lines[index].wholeMatch(of: marker),
                  let terminal = match.output[1].substring.flatMap({ Int($0) })
            else {
                index += 1
                continue
            }
            let kind: Step.Kind = switch match.output[2].substring.map(String.init) {
            case ": keeps running": .keepsRunning
            case " prints": .prints
            default: .run
            }
            index += 1
            guard index < lines.count, lines[index].hasPrefix("```") else {
                throw Malformed(line: index + 1, what: "a marker not followed by a fenced block")
            }
            let first = index + 2
            index += 1
            var body: [String] = []
            while index < lines.count, !lines[index].hasPrefix("```") {
                body.append(lines[index])
                index += 1
            }
            var commands: [Command] = []
            if kind == .prints {
                commands = [Command(text: "", output: body)]
            } else {
                for line in body {
                    if line.hasPrefix("$ ") {
                        commands.append(Command(text: String(line.dropFirst(2)), output: []))
                    } else if commands.isEmpty {
                        throw Malformed(line: first, what: "output before the first '$ ' command")
                    } else {
                        commands[commands.count - 1].output.append(line)
                    }
                }
                if commands.isEmpty { throw Malformed(line: first, what: "a block without a '$ ' command") }
                if kind == .keepsRunning, commands.count != 1 {
                    throw Malformed(line: first, what: "a block that keeps running holds one command")
                }
            }
            steps.append(Step(kind: kind, terminal: terminal, commands: commands, line: first))
            index += 1
        }
        return steps
    }

    struct Malformed: Error, CustomStringConvertible {
        var line: Int
        var what: String
        var description: String { "line \(line): \(what)" }
    }

    /// The page's lines as the broker at `port` prints them: `7420` for its port.
    static func normalized(_ text: String, port: Int?) -> [String] {
        var text = text
        if let port { text = text.replacingOccurrences(of: "127.0.0.1:\(port)", with: "127.0.0.1:7420") }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Whether `expected` appears in `lines` in order (other lines may come between).
    static func appearsInOrder(_ expected: [String], in lines: [String]) -> Bool {
        var rest = lines[...]
        for line in expected {
            guard let found = rest.firstIndex(of: line) else { return false }
            rest = rest[(found + 1)...]
        }
        return true
    }

    /// Every subscriber the broker counts, over all names.
    static func subscriptions(_ observer: HubClient) async throws -> Int {
        let catalog = try await observer.list()
        return catalog.subjects.reduce(0) { $0 + $1.subscribers } + catalog.pipelines.reduce(0) { $0 + $1.subscribers }
            + catalog.triggers.reduce(0) { $0 + $1.subscribers }
    }

    static func waitUntil(_ what: String, timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while try await !condition() {
            guard clock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The pages whose marked blocks run, each with the fewest blocks it has (a broken
    /// marker fails there instead of leaving a block unchecked).
    static let pages = [("docs/getting-started.md", 12), ("README.md", 5)]

    @Test(arguments: pages)
    func theMarkedBlocksOfThePageRunAndPrintWhatItShows(page: String, blocks: Int) async throws {
        let hubcli = try HubCLIExecutable.locate()
        let root = HubCLIExecutable.packageRoot
        let markdown = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        let steps = try Self.steps(in: markdown)
        #expect(steps.count >= blocks, "\(page): only \(steps.count) marked blocks")

        // `hubcli` on the PATH is the one built beside the tests.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("getting-started-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("hubcli"), withDestinationURL: hubcli)
        var environment: [String: String?] = [
            "HUB_URL": nil, "HUB_TOKEN": nil, "HUBCLI": nil,
            "PATH": folder.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        ]
        let bash = URL(fileURLWithPath: "/bin/bash")
        func shell(_ command: String) -> [String] { ["-c", "cd \"$0\" && exec \(command)", root.path] }

        var port: Int?
        var observer: HubClient?
        var running: [Int: RunningProcess] = [:]
        var brokerTerminal: Int?
        // For each terminal, how many lines of its standard output a `prints` block matched.
        var consumed: [Int: Int] = [:]
        defer {
            for (terminal, process) in running where terminal != brokerTerminal { process.process.interrupt() }
            if let brokerTerminal { running[brokerTerminal]?.process.interrupt() }
        }

        for step in steps {
            let place = "\(page):\(step.line)"
            switch step.kind {
            case .run:
                for command in step.commands {
                    let result = try await run(bash, shell(command.text), environment: environment)
                    #expect(result.status == 0, "\(place): $ \(command.text) exited with \(result.status): \(result.stderr)")
                    let printed = Self.normalized(result.stdout, port: port) + Self.normalized(result.stderr, port: port)
                    #expect(printed == command.output, "\(place): $ \(command.text) printed \(printed), the page shows \(command.output)")
                }

            case .keepsRunning:
                let command = step.commands[0]
                let before: Int
                if let previous = running.removeValue(forKey: step.terminal) {
                    // Ctrl-C, then the broker no longer counts its subscription.
                    var counted = 0
                    if let observer { counted = try await Self.subscriptions(observer) }
                    previous.process.interrupt()
                    _ = try await previous.finish()
                    if let observer {
                        try await Self.waitUntil("the broker to count the stopped command's subscription gone") {
                            try await Self.subscriptions(observer) < counted
                        }
                    }
                }
                if let observer { before = try await Self.subscriptions(observer) } else { before = 0 }
                let serves = command.text.hasPrefix("hubcli serve")
                let process = try RunningProcess(bash, shell(serves ? command.text + " --port 0" : command.text), environment: environment)
                running[step.terminal] = process
                consumed[step.terminal] = 0
                if serves {
                    let bound = try await process.port()
                    port = bound
                    brokerTerminal = step.terminal
                    environment["HUB_URL"] = "ws://127.0.0.1:\(bound)/"
                    observer = try await HubClient.connect(to: "ws://127.0.0.1:\(bound)/", configuration: testConfiguration())
                } else {
                    guard let observer else {
                        Issue.record("\(place): a client command keeps running before any broker does")
                        return
                    }
                    try await Self.waitUntil("\(place): the broker to count the subscription of $ \(command.text)") {
                        try await Self.subscriptions(observer) > before
                    }
                }
                try await Self.waitUntil("\(place): $ \(command.text) to print \(command.output)") {
                    let (stdout, stderr) = process.printed()
                    return Self.appearsInOrder(command.output, in: Self.normalized(stdout, port: port) + Self.normalized(stderr, port: port))
                }

            case .prints:
                guard let process = running[step.terminal] else {
                    Issue.record("\(place): terminal \(step.terminal) runs nothing")
                    continue
                }
                let expected = step.commands[0].output
                let start = consumed[step.terminal] ?? 0
                do {
                    try await Self.waitUntil("\(place): terminal \(step.terminal) to print \(expected)") {
                        Self.normalized(process.printed().stdout, port: port).count >= start + expected.count
                    }
                } catch {
                    Issue.record("\(error); it printed \(Self.normalized(process.printed().stdout, port: port).dropFirst(start))")
                }
                let lines = Self.normalized(process.printed().stdout, port: port)
                let next = Array(lines.dropFirst(start).prefix(expected.count))
                #expect(next == expected, "\(place): terminal \(step.terminal) printed \(next), the page shows \(expected)")
                consumed[step.terminal] = start + expected.count
            }
        }
        await observer?.close()
        // Every command still running ends cleanly when interrupted, the broker last.
        for (terminal, process) in running where terminal != brokerTerminal {
            process.process.interrupt()
            _ = try await process.finish()
        }
        if let brokerTerminal, let broker = running[brokerTerminal] {
            broker.process.interrupt()
            let stopped = try await broker.finish()
            #expect(stopped.status == 0, "the broker exited with \(stopped.status) on Ctrl-C: \(stopped.stderr)")
        }
        running = [:]
    }

    @Test func theMarkersAreRead() throws {
        let steps = try Self.steps(in: """
            <!-- terminal 1: keeps running -->
            ```console
            $ hubcli serve
            hubcli: listening on ws://127.0.0.1:7420/
            ```
            text
            <!-- terminal 2 -->
            ```console
            $ hubcli send a 1
            $ hubcli subscribe --pipeline 'sequence([1])'
            1
            hubcli: completed after 1 value
            ```
            <!-- terminal 3 prints -->
            ```console
            1
            ```
            ```console
            $ not marked
            ```
            """)
        #expect(steps == [
            Step(kind: .keepsRunning, terminal: 1, commands: [Command(text: "hubcli serve", output: ["hubcli: listening on ws://127.0.0.1:7420/"])], line: 3),
            Step(kind: .run, terminal: 2, commands: [
                Command(text: "hubcli send a 1", output: []),
                Command(text: "hubcli subscribe --pipeline 'sequence([1])'", output: ["1", "hubcli: completed after 1 value"]),
            ], line: 9),
            Step(kind: .prints, terminal: 3, commands: [Command(text: "", output: ["1"])], line: 16),
        ])
        #expect(throws: Malformed.self) { try Self.steps(in: "<!-- terminal 1 -->\ntext\n") }
        #expect(Self.normalized("a 127.0.0.1:5000/\n", port: 5000) == ["a 127.0.0.1:7420/"])
        #expect(Self.appearsInOrder(["a", "c"], in: ["a", "log", "c"]))
        #expect(!Self.appearsInOrder(["c", "a"], in: ["a", "c"]))
    }
}
