import HubLoop
import HubTransport
import HubWire

/// How the publisher paces its `send`s.
enum BenchPacing: Sendable {
    /// As fast as the server takes them: no ack per message, but every `ackEvery`-th
    /// carries one, and at most `window` messages are unacknowledged or not yet received
    /// by the slowest subscriber.
    case unbounded(window: Int, ackEvery: Int)
    /// `perSecond` messages a second, each sent when due (a ``BenchPacer`` wakes the
    /// loop at each message's time); a message
    /// due while the slowest subscriber is `window` messages behind is skipped (not
    /// sent later), so the rate is a ceiling and the broker is never overrun.
    case rate(perSecond: Double, window: Int)
    /// One message at a time, when ``BenchPublisher/sendOne()`` is called (large values).
    case manual
}

/// The publisher connection of the load generator: sends values carrying their publish
/// timestamp (`CLOCK_MONOTONIC` ns) into the case's subject. Confined to its loop.
final class BenchPublisher: WebSocketConnectionHandler {
    private let run: BenchRun
    private let eventLoop: EventLoop
    private let pacing: BenchPacing
    /// `{"op":"send","to":"<subject>","value":` and the value's start, up to its timestamp.
    private let head: [UInt8]
    /// The value after its timestamp (the padding), without the message's closing brace.
    private let tail: [UInt8]
    private var prefix: [UInt8] = []
    private var suffix: [UInt8] = []
    private var connection: WebSocketConnection?
    private var running = false
    private var sent = 0
    private var acked = 0
    private var pollScheduled = false
    private var pacer: BenchPacer?
    private var rateStart: Int64 = 0
    private var rateSent = 0
    private static let closingBrace: [UInt8] = [UInt8(ascii: "}")]

    /// A publisher into `subject` of values of about `size` bytes of JSON.
    init(run: BenchRun, eventLoop: EventLoop, subject: String, size: Int, shape: BenchShape, pacing: BenchPacing) {
        self.run = run
        self.eventLoop = eventLoop
        self.pacing = pacing
        let digits = String(EventLoop.monotonicNanoseconds()).utf8.count
        let envelope = #"{"op":"send","to":""# + subject + #"","value":"#
        switch shape {
        case .object:
            head = Array((envelope + #"{"ts":"#).utf8)
            let pad = max(0, size - 16 - digits)
            tail = Array(#","pad":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: pad) + Array(#""}"#.utf8)
        case .string:
            head = Array((envelope + #""ts:"#).utf8)
            let pad = max(0, size - 6 - digits)
            tail = [UInt8(ascii: ";")] + [UInt8](repeating: UInt8(ascii: "x"), count: pad) + [UInt8(ascii: "\"")]
        }
    }

    /// Connects the publisher with `loop`'s client. Loop only.
    func connect(_ loop: BenchLoop, to target: BenchTarget) {
        connection = loop.connect(to: target, handler: self)
    }

    /// Starts publishing with the pacing given at creation. Loop only.
    func start() {
        running = true
        switch pacing {
        case .unbounded:
            pump()
        case .rate(let perSecond, _):
            rateStart = EventLoop.monotonicNanoseconds()
            rateSent = 0
            tick()
            let box = LoopBound(self, eventLoop: eventLoop)
            pacer = BenchPacer(interval: Int64((1e9 / perSecond).rounded()), eventLoop: eventLoop) {
                box.value.tick()
            }
        case .manual:
            break
        }
    }

    /// Stops publishing. Loop only.
    func stop() {
        running = false
        pacer.take()?.stop()
    }

    /// Sends one value now (any pacing). Loop only.
    func sendOne() {
        guard let connection else { return }
        sent += 1
        prefix.removeAll(keepingCapacity: true)
        prefix.append(contentsOf: head)
        WireBytes.append(EventLoop.monotonicNanoseconds(), to: &prefix)
        var ackEvery = 0
        if case .unbounded(_, let every) = pacing { ackEvery = every }
        let sentOK: Bool
        if ackEvery > 0, sent % ackEvery == 0 {
            suffix.removeAll(keepingCapacity: true)
            suffix.append(contentsOf: #","ack":"#.utf8)
            WireBytes.append(Int64(sent), to: &suffix)
            suffix.append(UInt8(ascii: "}"))
            sentOK = send(connection, suffix: suffix)
        } else {
            sentOK = send(connection, suffix: BenchPublisher.closingBrace)
        }
        if !sentOK { running = false }
        run.published.store(sent)
    }

    private func send(_ connection: WebSocketConnection, suffix: [UInt8]) -> Bool {
        prefix.withUnsafeBytes { prefix in
            tail.withUnsafeBytes { body in
                suffix.withUnsafeBytes { suffix in
                    connection.send(prefix: prefix, body: body, suffix: suffix, kind: .text)
                }
            }
        }
    }

    /// Sends while the window allows; woken again by acks, by the outbound queue
    /// draining, or by a short poll while the slowest subscriber lags.
    private func pump() {
        guard running, case .unbounded(let window, _) = pacing, let connection, connection.state == .open else { return }
        var floor = run.minimumDelivered
        while sent - acked < window, connection.queuedBytes < 256 << 10, running {
            if sent - floor >= window {
                floor = run.minimumDelivered
                if sent - floor >= window {
                    schedulePoll()
                    return
                }
            }
            sendOne()
        }
    }

    private func schedulePoll() {
        guard !pollScheduled else { return }
        pollScheduled = true
        let scheduler = eventLoop.scheduler
        _ = scheduler.schedule(after: scheduler.now.advanced(by: .microseconds(100))) { [weak self] in
            guard let self else { return }
            self.pollScheduled = false
            self.pump()
        }
    }

    /// Sends every message due by now at the fixed rate.
    private func tick() {
        guard running, case .rate(let perSecond, let window) = pacing else { return }
        let now = EventLoop.monotonicNanoseconds()
        let due = Int(Double(now - rateStart) * perSecond / 1e9) + 1
        while rateSent < due, running {
            if sent - run.minimumDelivered >= window {
                rateSent = due
                break
            }
            sendOne()
            rateSent += 1
        }
    }

    // MARK: WebSocketConnectionHandler

    func connectionDidOpen(_ connection: WebSocketConnection) {
        run.publisherOpen.store(1)
    }

    func connection(_ connection: WebSocketConnection, didReceive payload: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        // {"op":"ack","ack":N}
        let text = String(decoding: payload.prefix(200), as: UTF8.self)
        let ackPrefix = #"{"op":"ack","ack":"#
        if text.hasPrefix(ackPrefix) {
            let digits = text.dropFirst(ackPrefix.count).prefix { $0.isASCII && $0.isNumber }
            if let value = Int(digits) { acked = max(acked, value) }
            pump()
        } else if text.hasPrefix(#"{"op":"error""#) {
            run.fail("publisher: \(text)")
        }
    }

    func connectionDidDrainOutbound(_ connection: WebSocketConnection) {
        pump()
    }

    func connection(_ connection: WebSocketConnection, didCloseWith code: WebSocketCloseCode?, reason: String) {
        running = false
        if !run.tearingDown.load(ordering: .relaxed) {
            run.fail("publisher closed: \(code.map { "\($0.rawValue)" } ?? "no code") \(reason)")
        }
        run.closed.increment()
    }

    func connection(_ connection: WebSocketConnection, didFailToConnect error: TransportError) {
        run.fail("publisher could not connect: \(error)")
        run.closed.increment()
    }
}
