import NetworkTestSupport
import RemoteTestSupport
import Foundation
import HubClient
import HubEngine
import HubServer
import HubTransport
import Testing

@Suite("HubClient scale")
struct HubClientScaleTests {
    @Test func thousandSubscriptionsOnOneConnection() async throws {
        try await withServiceAndClient { _, _, client in
            let events = EventQueue<Int>()
            var cancellables: [AnyCancellable] = []
            for index in 0..<1000 {
                cancellables.append(client.subscribe(to: "fan").sink(
                    receiveCompletion: { _ in }, receiveValue: { _ in events.push(index) }))
            }
            #expect(subscribers(of: "fan", in: try await client.list()) == 1000)
            try await client.send("hello", to: "fan")
            let got = try await events.next(1000, timeout: .seconds(30), "values of 1000 subscriptions")
            #expect(Set(got) == Set(0..<1000))
            for cancellable in cancellables { cancellable.cancel() }
            #expect(subscribers(of: "fan", in: try await client.list()) == 0)
        }
    }

    @Test func twoHundredClientsOnOneEventLoop() async throws {
        let (service, port) = try await startService()
        let loop = try EventLoop(configuration: .init(name: "clients"))
        let values = EventQueue<Int>()
        var clients: [HubClient] = []
        var recorders: [Recorder] = []
        do {
            clients = try await withThrowingTaskGroup(of: HubClient.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        try await HubClient.connect(
                            to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration(), eventLoop: loop)
                    }
                }
                var connected: [HubClient] = []
                for try await client in group { connected.append(client) }
                return connected
            }
            #expect(clients.count == 200)
            #expect(Set(await sessions(of: clients)).count == 200)
            for client in clients {
                let recorder = Recorder(demand: .max(1))
                recorders.append(recorder)
                client.subscribe(to: "room").subscribe(recorder)
            }
            // Each client's list() is answered after its own subscribe.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients { group.addTask { _ = try await client.list() } }
                try await group.waitForAll()
            }
            #expect(subscribers(of: "room", in: try await clients[0].list()) == 200)
            try await clients[0].send("everyone", to: "room")
            for (index, recorder) in recorders.enumerated() {
                #expect(try await recorder.events.next() == .value("everyone"))
                values.push(index)
            }
            #expect(values.drain().count == 200)
        } catch {
            for client in clients { await client.close() }
            loop.shutdown()
            await service.shutdown()
            throw error
        }
        for client in clients { await client.close() }
        loop.shutdown()
        await service.shutdown()
    }

    private func sessions(of clients: [HubClient]) async -> [String] {
        var result: [String] = []
        for client in clients {
            if let session = await client.session { result.append(session) }
        }
        return result
    }
}
