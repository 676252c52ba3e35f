@testable import HubServer
import Testing

/// The waiters for room in a connection's outbound queue, without a connection.
@Suite("OutboundRoom")
struct OutboundRoomTests {
    @Test func aDrainResumesEveryWaiterOnceInOrder() {
        let room = OutboundRoom()
        var resumed: [Int] = []
        room.wait { resumed.append(1) }
        room.wait { resumed.append(2) }
        #expect(resumed.isEmpty)
        room.drained()
        #expect(resumed == [1, 2])
        room.drained()
        #expect(resumed == [1, 2])
    }

    @Test func aWaiterThatBeginsDuringADrainWaitsForTheNextOne() {
        let room = OutboundRoom()
        var resumed: [String] = []
        room.wait {
            resumed.append("first")
            room.wait { resumed.append("again") }
        }
        room.drained()
        #expect(resumed == ["first"])
        room.drained()
        #expect(resumed == ["first", "again"])
    }
}
