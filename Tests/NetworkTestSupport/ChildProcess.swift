import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, with the part of Foundation's `Process`
/// API the tests use (the same names, so that a test reads as it would with `Process`).
///
/// Why not `Process`: the toolchain's Foundation (6.3.1) over-reads in `Process.run()`
/// on Linux (swift-corelibs-foundation #5472: `findMaximumOpenFromProcSelfFD()` copies
/// whole 256-byte dirents out of readdir's buffer) and crashed whole test runs with a
/// SIGSEGV now and then, on loaded machines, while tests spawned nats-server or hubcli
/// beside many open sockets. Here the child closes every descriptor above 2 with
/// `posix_spawn_file_actions_addclosefrom_np`, and nothing reads `/proc/self/fd`.
///
/// Standard streams are a `Pipe` (the child's end is closed in this process once the
/// child runs, so that a reader sees the end of the output when the child exits), a
/// `FileHandle`, or `nil` (inherited). Runs once. Thread-safe.
public final class ChildProcess: @unchecked Sendable {
    /// The program to run.
    public var executableURL: URL?
    /// Its arguments (without the program's name).
    public var arguments: [String] = []
    /// Its environment; `nil` inherits this process's.
    public var environment: [String: String]?
    /// Its standard input, output and error: a `Pipe`, a `FileHandle`, or `nil` (inherited).
    public var standardInput: Any?
    public var standardOutput: Any?
    public var standardError: Any?
    /// Runs (on a thread of its own) once the child has exited.
    public var terminationHandler: (@Sendable (ChildProcess) -> Void)?

    private let condition = NSCondition()
    private var pid: pid_t = 0
    private var exitStatus: Int32?

    /// A process to configure, then ``run()``.
    public init() {}

    /// The child's process id once it runs (0 before).
    public var processIdentifier: Int32 { condition.withLock { pid } }

    /// Whether the child was started and has not exited yet.
    public var isRunning: Bool { condition.withLock { pid != 0 && exitStatus == nil } }

    /// The exit code of a child that exited, or the number of the signal that ended it
    /// (as Foundation's `Process` reports both). Only after the exit.
    public var terminationStatus: Int32 {
        condition.withLock {
            guard let status = exitStatus else { return 0 }
            return ChildProcess.exited(status) ? (status >> 8) & 0xff : status & 0x7f
        }
    }

    /// Whether the child was ended by a signal. Only after the exit.
    public var endedBySignal: Bool { condition.withLock { exitStatus.map { !ChildProcess.exited($0) } ?? false } }

    private static func exited(_ status: Int32) -> Bool { status & 0x7f == 0 }

    /// An error of `posix_spawn`, with the program it could not start.
    public struct SpawnFailure: Error, CustomStringConvertible {
        public let path: String
        public let code: Int32
        public var description: String { "cannot start \(path): \(String(cString: strerror(code)))" }
    }

    /// Starts the child.
    public func run() throws {
        guard let path = executableURL?.path else { throw SpawnFailure(path: "(no executable)", code: ENOENT) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [FileHandle] = []
        for (stream, target) in [(standardInput, Int32(0)), (standardOutput, 1), (standardError, 2)] {
            switch stream {
            case let pipe as Pipe:
                let end = target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
                childEnds.append(end)
            case let handle as FileHandle:
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            default:
                break
            }
        }
        // Nothing else of this process's (sockets, other children's pipes) goes along.
        guard let closeFrom = ChildProcess.addCloseFrom else { throw SpawnFailure(path: path, code: ENOSYS) }
        guard closeFrom(&actions, 3) == 0 else { throw SpawnFailure(path: path, code: EINVAL) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default dispositions and no blocked signals in the child (the test process
        // ignores SIGPIPE, which exec would otherwise keep ignored).
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let environment = (self.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var spawned: pid_t = 0
        let code = posix_spawn(&spawned, path, &actions, &attributes, argv, envp)
        guard code == 0 else { throw SpawnFailure(path: path, code: code) }
        for end in childEnds { try? end.close() }
        let child = spawned
        condition.withLock { pid = child }
        Thread.detachNewThread { [self] in reap(child) }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its
    /// header declares only for `_GNU_SOURCE`: looked up by name.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private func reap(_ child: pid_t) {
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1, errno == EINTR {}
        condition.withLock {
            exitStatus = status
            condition.broadcast()
        }
        terminationHandler?(self)
    }

    /// Waits for the child to exit.
    public func waitUntilExit() {
        condition.withLock {
            while pid != 0, exitStatus == nil { condition.wait() }
        }
    }

    /// Sends SIGTERM.
    public func terminate() { send(SIGTERM) }

    /// Sends SIGINT.
    public func interrupt() { send(SIGINT) }

    private func send(_ number: Int32) {
        condition.withLock {
            if pid != 0, exitStatus == nil { kill(pid, number) }
        }
    }
}
