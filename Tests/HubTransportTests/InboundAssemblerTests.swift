@testable import HubTransport
import Testing

/// Reassembly of lws's chunks into messages and the size limit, without a socket.
@Suite("InboundAssembler")
struct InboundAssemblerTests {
    private func receive(
        _ assembler: inout InboundAssembler, _ bytes: [UInt8], binary: Bool = false, last: Bool
    ) -> InboundAssembler.Outcome {
        bytes.withUnsafeBytes { assembler.receive($0, isBinary: binary, completesMessage: last) }
    }

    @Test func aMessageInOneChunkIsDeliveredFromTheChunk() {
        var assembler = InboundAssembler(maximumMessageSize: 16)
        #expect(receive(&assembler, [1, 2, 3], binary: true, last: true) == .deliverChunk)
        #expect(assembler.kind == .binary)
        #expect(!assembler.isReceiving)
        #expect(receive(&assembler, [], last: true) == .deliverChunk)
        #expect(assembler.kind == .text)
    }

    @Test func chunksAreAssembledAndTheKindComesFromTheFirst() {
        var assembler = InboundAssembler(maximumMessageSize: 100)
        #expect(receive(&assembler, Array("hel".utf8), binary: true, last: false) == .awaitMore)
        #expect(assembler.isReceiving)
        #expect(receive(&assembler, [], binary: false, last: false) == .awaitMore)
        #expect(receive(&assembler, Array("lo".utf8), binary: false, last: true) == .deliverAssembled)
        #expect(assembler.kind == .binary)
        var message = assembler.takeMessage()
        #expect(message == Array("hello".utf8))
        assembler.recycle(&message)
        // The next message starts afresh.
        #expect(receive(&assembler, [9], last: false) == .awaitMore)
        #expect(receive(&assembler, [8], last: true) == .deliverAssembled)
        #expect(assembler.takeMessage() == [9, 8])
        #expect(assembler.kind == .text)
    }

    @Test func theKindIsOnlyAskedForAtAMessagesFirstChunk() {
        var assembler = InboundAssembler(maximumMessageSize: 100)
        var asked = 0
        func isBinary() -> Bool {
            asked += 1
            return false
        }
        for last in [false, false, true] {
            _ = [UInt8(1)].withUnsafeBytes { assembler.receive($0, isBinary: isBinary(), completesMessage: last) }
        }
        #expect(asked == 1)
    }

    @Test func aMessageAtTheLimitPassesAndOneByteMoreIsTooLarge() {
        var single = InboundAssembler(maximumMessageSize: 4)
        #expect(receive(&single, [1, 2, 3, 4], last: true) == .deliverChunk)
        #expect(receive(&single, [1, 2, 3, 4, 5], last: true) == .tooLarge)

        var chunked = InboundAssembler(maximumMessageSize: 4)
        #expect(receive(&chunked, [1, 2], last: false) == .awaitMore)
        #expect(receive(&chunked, [3, 4], last: true) == .deliverAssembled)
        #expect(chunked.takeMessage() == [1, 2, 3, 4])
        #expect(receive(&chunked, [1, 2, 3], last: false) == .awaitMore)
        #expect(receive(&chunked, [4, 5], last: false) == .tooLarge)
        // The partial message is dropped.
        #expect(!chunked.isReceiving)
        #expect(chunked.takeMessage().isEmpty)
    }

    @Test func aFirstChunkAloneOverTheLimitIsTooLarge() {
        var assembler = InboundAssembler(maximumMessageSize: 2)
        #expect(receive(&assembler, [1, 2, 3], last: false) == .tooLarge)
        #expect(!assembler.isReceiving)
    }
}
