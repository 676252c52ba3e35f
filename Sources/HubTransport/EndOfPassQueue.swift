import DequeModule

/// Server sockets whose next step waits for the end of an event-loop pass and is taken a
/// few at a time: at most ``perPass`` sockets a pass and for at most ``timePerPass``
/// nanoseconds of wall-clock time, oldest first; the rest wait for the end of the next
/// pass. A socket that lws closed meanwhile is skipped.
///
/// A burst of sockets ready at once (10,000 clients closing together, hundreds of upgrade
/// requests read in one pass) then delays the loop's other connections by a bounded
/// amount a pass. Loop thread only.
final class EndOfPassQueue {
    private var sockets = Deque<ServerSocket>()
    private var scheduled = false
    private let eventLoop: EventLoop
    /// How many sockets a pass takes at most (read at each pass: limits can change).
    private let perPass: () -> Int
    /// The wall-clock nanoseconds after which a pass takes no more.
    let timePerPass: Int64
    /// The step each socket waits for.
    private let step: (ServerSocket) -> Void
    /// The most sockets one pass has taken (for tests).
    private(set) var mostInOnePass = 0

    /// A queue on `eventLoop` that takes `step` for at most `perPass()` sockets and
    /// `timePerPass` nanoseconds a pass.
    init(
        eventLoop: EventLoop, perPass: @escaping () -> Int, timePerPass: Int64,
        step: @escaping (ServerSocket) -> Void
    ) {
        self.eventLoop = eventLoop
        self.perPass = perPass
        self.timePerPass = timePerPass
        self.step = step
    }

    /// Sockets waiting.
    var count: Int { sockets.count }

    /// Queues `socket` for the end of this pass or a later one.
    func append(_ socket: ServerSocket) {
        sockets.append(socket)
        schedule()
    }

    private func schedule() {
        guard !scheduled else { return }
        scheduled = true
        eventLoop.executeAtEndOfPass { [weak self] in self?.takeAPassWorth() }
    }

    private func takeAPassWorth() {
        scheduled = false
        let started = EventLoop.monotonicNanoseconds()
        var taken = 0
        while taken < max(1, perPass()), let socket = sockets.popFirst() {
            guard socket.wsi != nil else { continue }  // lws closed it meanwhile
            taken += 1
            step(socket)
            if EventLoop.monotonicNanoseconds() - started >= timePerPass { break }
        }
        mostInOnePass = max(mostInOnePass, taken)
        if !sockets.isEmpty { schedule() }
    }
}
