@testable import HubTransport
import Testing

/// The outbound queue state machine without a socket: what it frames, in which writes,
/// and what it keeps accounted (bytes, messages, recycled buffers).
@Suite("OutboundQueue")
struct OutboundQueueTests {
    /// A queue plus the buffer pool its writes recycle into, and deterministic masking keys.
    final class Harness {
        var queue: OutboundQueue
        var pool = BufferPool()
        var keys: [UInt32] = []
        var nextKey: UInt32 = 0x0102_0304
        var spare: [UInt8] = Array(repeating: 0, count: 10)

        init(role: WebSocketConnection.Role, limits: WebSocketConnection.Limits = .init()) {
            queue = OutboundQueue(limits: limits, role: role)
        }

        /// Queues one message as prefix / body / suffix thirds.
        func send(_ payload: [UInt8], _ kind: WebSocketMessageKind = .text) {
            let third = payload.count / 3
            payload.withUnsafeBytes { bytes in
                queue.append(
                    kind: kind, prefix: UnsafeRawBufferPointer(rebasing: bytes[0..<third]),
                    body: UnsafeRawBufferPointer(rebasing: bytes[third..<2 * third]),
                    suffix: UnsafeRawBufferPointer(rebasing: bytes[(2 * third)...]),
                    maskingKey: {
                        nextKey = nextKey &* 2_654_435_761 &+ 1
                        keys.append(nextKey)
                        return nextKey
                    },
                    newBuffer: { pool.take() })
            }
        }

        func send(_ text: String) { send(Array(text.utf8)) }

        /// Queues one message built by `sendFrame`'s path (not preframed).
        func sendUnframed(_ payload: [UInt8], _ kind: WebSocketMessageKind = .text) {
            var frame = OutboundFrame(buffer: pool.take(), kind: kind)
            frame.storage.append(contentsOf: payload)
            queue.append(frame)
        }

        /// Appends one element under `key`, `[` opening, `,` separating, `]` closing.
        @discardableResult
        func coalesce(_ element: String, key: UInt64) -> Bool {
            queue.appendCoalescing(key: key, kind: .text, closing: Array("]".utf8), newBuffer: { pool.take() }) {
                storage, opens in
                storage.append(contentsOf: ((opens ? "[" : ",") + element).utf8)
            }
        }

        /// Performs the next step as the connection would, returning the bytes a raw write
        /// would hand to the socket (preframed, batch) or the payload bytes lws frames.
        func write() -> (OutboundQueue.WriteStep, [UInt8], drained: Bool) {
            let step = queue.nextStep()
            var bytes: [UInt8] = []
            switch step {
            case .idle:
                break
            case .preframed(let count):
                bytes = queue.withHeadPayload { Array($0.prefix(count)) }
            case .batch(let batch):
                var scratch = pool.takeScratch()
                queue.encodeBatch(batch, into: &scratch)
                bytes = scratch
                #expect(scratch.count == batch.byteCount)
                pool.returnScratch(&scratch)
            case .payload(let write):
                bytes = queue.withHeadPayload { Array($0[write.offset..<write.offset + write.count]) }
            }
            let drained = queue.complete(step, pool: &pool)
            return (step, bytes, drained)
        }
    }

    @Test func smallServerMessagesAreFramedIntoOneRawWrite() {
        let harness = Harness(role: .server)
        harness.send("a")
        harness.send(Array(repeating: 7, count: 125), .binary)
        harness.send(String(repeating: "x", count: 126))
        harness.send([], .binary)
        #expect(harness.queue.count == 1)
        let expectedBytes = (2 + 1) + (2 + 125) + (4 + 126) + 2
        #expect(harness.queue.queuedBytes == expectedBytes)
        #expect(harness.keys.isEmpty)
        let (step, bytes, drained) = harness.write()
        #expect(step == .preframed(byteCount: expectedBytes))
        #expect(parseFrames(bytes) == [
            finalFrame(.text, Array("a".utf8)), finalFrame(.binary, Array(repeating: 7, count: 125)),
            finalFrame(.text, Array(String(repeating: "x", count: 126).utf8)), finalFrame(.binary, []),
        ])
        #expect(drained)
        #expect(harness.queue.queuedBytes == 0)
        #expect(harness.queue.messagesWritten == 4)
        // The tail keeps its (small) buffer for the next messages: nothing goes to the pool.
        #expect(harness.pool.spareCount == 0)
        #expect(harness.write().0 == .idle)
    }

    @Test func smallClientMessagesAreMaskedWithAFreshKeyEach() {
        let harness = Harness(role: .client)
        let messages = [Array("hello".utf8), Array(repeating: 0xAB, count: 300), []]
        for message in messages { harness.send(message, .binary) }
        #expect(harness.keys.count == 3)
        let (step, bytes, _) = harness.write()
        #expect(step == .preframed(byteCount: (6 + 5) + (8 + 300) + 6))
        let keyBytes = harness.keys.map { key in (0..<4).map { UInt8(truncatingIfNeeded: key >> (24 - 8 * $0)) } }
        #expect(parseFrames(bytes) == zip(messages, keyBytes).map { finalFrame(.binary, $0, key: $1) })
        // The payload on the wire is masked, not the plain bytes.
        #expect(Array(bytes[6..<11]) != Array("hello".utf8))
    }

    @Test func aPingGoesBehindWhatIsQueuedAndNeverBetweenFragments() {
        let harness = Harness(role: .server, limits: .init(fragmentSize: 1000))
        harness.send("a")
        harness.sendUnframed(Array(repeating: 1, count: 2500))
        harness.queue.appendPing(payload: [7, 8], maskingKey: { 0 }, newBuffer: { harness.pool.take() })
        #expect(harness.queue.queuedBytes == (2 + 1) + 2500 + 4)
        var steps: [OutboundQueue.WriteStep] = []
        var frames: [ParsedFrame] = []
        while harness.queue.nextStep() != .idle {
            let (step, bytes, _) = harness.write()
            steps.append(step)
            if case .preframed = step { frames += parseFrames(bytes) ?? [] }
        }
        // The message "a", the large one in lws's fragments, then the ping on its own.
        #expect(frames == [finalFrame(.text, Array("a".utf8)), ParsedFrame(fin: true, opcode: 0x9, maskingKey: nil, payload: [7, 8])])
        guard case .preframed = steps.last else {
            Issue.record("the ping is not the last write: \(steps)")
            return
        }
        #expect(harness.queue.queuedBytes == 0)
        #expect(harness.queue.messagesWritten == 3)
    }

    @Test func aClientPingIsMasked() {
        let harness = Harness(role: .client)
        harness.queue.appendPing(payload: [1, 2], maskingKey: { 0x0A0B_0C0D }, newBuffer: { harness.pool.take() })
        let (step, bytes, _) = harness.write()
        #expect(step == .preframed(byteCount: 8))
        let masked: [UInt8] = [0x89, 0x82, 0x0A, 0x0B, 0x0C, 0x0D, 1 ^ 0x0A, 2 ^ 0x0B]
        #expect(bytes == masked)
    }

    @Test func aPreframedEntryStopsGrowingAtTheBatchSize() {
        let harness = Harness(role: .server, limits: .init(maximumBatchSize: 100))
        for index in 0..<5 { harness.send(String(repeating: "\(index)", count: 30)) }  // 32 bytes framed
        #expect(harness.queue.count == 2)  // 3 × 32 = 96 ≤ 100, then a new entry
        #expect(harness.write().0 == .preframed(byteCount: 96))
        let (step, bytes, drained) = harness.write()
        #expect(step == .preframed(byteCount: 64))
        #expect(parseFrames(bytes)?.map(\.payload) == [Array(String(repeating: "3", count: 30).utf8),
                                                       Array(String(repeating: "4", count: 30).utf8)])
        #expect(drained)
        #expect(harness.queue.messagesWritten == 5)
    }

    @Test func largeMessagesAreWrittenByLwsInFragments() {
        let harness = Harness(role: .server, limits: .init(fragmentSize: 1000))
        let large = patternBytes(count: 2_500, seed: 1)
        harness.send(large, .binary)
        #expect(harness.queue.queuedBytes == 2_500)
        var received: [UInt8] = []
        var steps: [OutboundQueue.WriteStep] = []
        while true {
            let (step, bytes, drained) = harness.write()
            steps.append(step)
            received += bytes
            if drained { break }
        }
        #expect(steps == [
            .payload(.init(offset: 0, count: 1000, kind: .binary, isFragmented: true, isLast: false)),
            .payload(.init(offset: 1000, count: 1000, kind: .binary, isFragmented: true, isLast: false)),
            .payload(.init(offset: 2000, count: 500, kind: .binary, isFragmented: true, isLast: true)),
        ])
        #expect(received == large)
        #expect(harness.queue.messagesWritten == 1)
        #expect(harness.queue.queuedBytes == 0)
    }

    @Test func messagesFromTheFragmentSizeOrSixtyFourKiBUpAreNotPreframed() {
        let harness = Harness(role: .server, limits: .init(fragmentSize: 100))
        harness.send(Array(repeating: 1, count: 99))
        harness.send(Array(repeating: 2, count: 100))
        #expect(harness.queue.count == 2)
        #expect(harness.write().0 == .preframed(byteCount: 2 + 99))
        #expect(harness.write().0 == .payload(.init(offset: 0, count: 100, kind: .text, isFragmented: true, isLast: true)))

        let wide = Harness(role: .server, limits: .init(fragmentSize: 1 << 20, maximumBatchSize: 1 << 20))
        wide.send(Array(repeating: 1, count: 65_535))
        wide.send(Array(repeating: 2, count: 65_536))
        #expect(wide.write().0 == .preframed(byteCount: 4 + 65_535))
        #expect(wide.write().0 == .payload(.init(offset: 0, count: 65_536, kind: .text, isFragmented: false, isLast: true)))
    }

    @Test func orderIsKeptAcrossPreframedAndLargeMessages() {
        let harness = Harness(role: .server, limits: .init(fragmentSize: 50))
        harness.send("one")
        harness.send(String(repeating: "L", count: 60))
        harness.send("two")  // not appended to the first entry: it would overtake the large one
        #expect(harness.queue.count == 3)
        var payloads: [[UInt8]] = []
        var large: [UInt8] = []
        while true {
            let (step, bytes, drained) = harness.write()
            switch step {
            case .preframed: payloads += parseFrames(bytes)?.map(\.payload) ?? []
            case .payload(let write):
                large += bytes
                if write.isLast { payloads.append(large) }
            default: Issue.record("unexpected \(step)")
            }
            if drained { break }
        }
        #expect(payloads == ["one", String(repeating: "L", count: 60), "two"].map { Array($0.utf8) })
    }

    @Test func unframedSmallServerMessagesAreBatchedUpToTheBatchSize() {
        let harness = Harness(role: .server, limits: .init(maximumBatchSize: 64))
        for index in 0..<4 { harness.sendUnframed(Array(repeating: UInt8(index), count: 20), index % 2 == 0 ? .text : .binary) }
        let (step, bytes, drained) = harness.write()
        // 22 + 22 = 44; a third (44 + 4 + 20 = 68) would pass 64.
        #expect(step == .batch(.init(messageCount: 2, payloadBytes: 40, byteCount: 44)))
        #expect(parseFrames(bytes) == [finalFrame(.text, Array(repeating: 0, count: 20)),
                                       finalFrame(.binary, Array(repeating: 1, count: 20))])
        #expect(!drained)
        #expect(harness.queue.queuedBytes == 40)
        let second = harness.write()
        #expect(second.0 == .batch(.init(messageCount: 2, payloadBytes: 40, byteCount: 44)))
        #expect(second.drained)
        #expect(harness.queue.messagesWritten == 4)
        #expect(harness.pool.spareCount == 4)
    }

    @Test func aLoneUnframedMessageOrAClientsIsWrittenByLws() {
        let server = Harness(role: .server)
        server.sendUnframed([1, 2, 3])
        #expect(server.write().0 == .payload(.init(offset: 0, count: 3, kind: .text, isFragmented: false, isLast: true)))
        let client = Harness(role: .client)
        client.sendUnframed([1])
        client.sendUnframed([2])
        #expect(client.write().0 == .payload(.init(offset: 0, count: 1, kind: .text, isFragmented: false, isLast: true)))
    }

    @Test func withoutBatchingEveryMessageIsItsOwnWrite() {
        let harness = Harness(role: .server, limits: .init(maximumBatchSize: 0))
        harness.send("a")
        harness.send("b")
        harness.sendUnframed(Array("c".utf8))
        #expect(harness.queue.count == 3)
        for text in ["a", "b", "c"] {
            let (step, bytes, _) = harness.write()
            #expect(step == .payload(.init(offset: 0, count: 1, kind: .text, isFragmented: false, isLast: true)))
            #expect(bytes == Array(text.utf8))
        }
    }

    @Test func coalescedElementsGrowOneMessageUntilItIsSealed() {
        let harness = Harness(role: .client)
        #expect(harness.coalesce("1", key: 9))
        #expect(!harness.coalesce("2", key: 9))
        #expect(!harness.coalesce("3", key: 9))
        #expect(harness.coalesce("x", key: 10))
        #expect(harness.queue.count == 2)
        #expect(harness.queue.queuedBytes == "[1,2,3]".utf8.count + "[x]".utf8.count)
        let (step, bytes, _) = harness.write()
        #expect(step == .payload(.init(offset: 0, count: 7, kind: .text, isFragmented: false, isLast: true)))
        #expect(bytes == Array("[1,2,3]".utf8))
        #expect(!harness.coalesce("y", key: 10))  // the tail is still open under 10
        #expect(harness.write().1 == Array("[x,y]".utf8))
        #expect(harness.queue.queuedBytes == 0)
    }

    @Test func aSealedMessageTakesNoMoreElements() {
        let harness = Harness(role: .client, limits: .init(fragmentSize: 4))
        harness.coalesce("12345", key: 1)  // fragmented: sealed at its first write
        #expect(harness.write().0 == .payload(.init(offset: 0, count: 4, kind: .text, isFragmented: true, isLast: false)))
        #expect(harness.coalesce("6", key: 1))  // a new message
        #expect(harness.queue.count == 2)
        #expect(harness.write().1 == Array("45]".utf8))
        #expect(harness.write().1 == Array("[6]".utf8))
    }

    @Test func coalescingStopsAtItsSizeLimit() {
        let harness = Harness(role: .client, limits: .init(maximumCoalescedFrameSize: 4))
        harness.coalesce("ab", key: 1)
        harness.coalesce("cd", key: 1)  // 3 bytes < 4: appended
        #expect(harness.coalesce("ef", key: 1))  // 6 bytes: a new message
        #expect(harness.write().1 == Array("[ab,cd]".utf8))
        #expect(harness.write().1 == Array("[ef]".utf8))
    }

    @Test func droppingTheQueueKeepsOnlyAMessageInProgress() {
        let harness = Harness(role: .server, limits: .init(fragmentSize: 10))
        harness.send(Array(repeating: 1, count: 25))
        harness.send("tail")
        _ = harness.write()  // ten bytes of the large message are out
        harness.queue.dropQueuedExceptInProgress()
        #expect(harness.queue.count == 1)
        #expect(harness.queue.queuedBytes == 15)
        #expect(harness.write().1.count == 10)
        #expect(harness.write().drained)

        let idle = Harness(role: .server)
        idle.send("a")
        idle.send("b")
        idle.queue.dropQueuedExceptInProgress()
        #expect(idle.queue.isEmpty)
        #expect(idle.queue.queuedBytes == 0)
    }

    @Test func theTailBufferIsReusedAndALargeOneGoesBackToThePool() {
        let harness = Harness(role: .server)
        harness.send("first")
        _ = harness.write()
        harness.pool.recycle(&harness.spare)  // a spare in the pool: the tail must not take it
        harness.send("second")
        #expect(harness.pool.spareCount == 1)
        #expect(parseFrames(harness.write().1)?.map(\.payload) == [Array("second".utf8)])
        // A burst grows the tail past what an idle connection should keep: once written,
        // its buffer goes back to the pool.
        for _ in 0..<200 { harness.send(String(repeating: "y", count: 120)) }
        let (step, _, drained) = harness.write()
        #expect(step == .preframed(byteCount: 200 * 122))
        #expect(drained)
        #expect(harness.pool.spareCount == 2)
    }

    @Test func somethingQueuedBehindTheTailSealsItIntoAnEntryInOrder() {
        let harness = Harness(role: .server)
        harness.send("a")
        harness.send("b")
        harness.sendUnframed(Array("c".utf8))
        harness.send("d")
        #expect(harness.queue.count == 3)
        var payloads: [[UInt8]] = []
        while true {
            let (step, bytes, drained) = harness.write()
            switch step {
            case .preframed: payloads += parseFrames(bytes)?.map(\.payload) ?? []
            case .payload: payloads.append(bytes)
            default: Issue.record("unexpected \(step)")
            }
            if drained { break }
        }
        #expect(payloads == ["a", "b", "c", "d"].map { Array($0.utf8) })
        #expect(harness.queue.messagesWritten == 4)
    }
}
