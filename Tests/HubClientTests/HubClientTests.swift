import NetworkTestSupport
import RemoteTestSupport
import Foundation
import HubClient
import HubValue
import HubServer
import HubTransport
import Testing

@Suite("HubClient")
struct HubClientTests {
    @Test func valuesArriveOnlyWithinDemand() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .max(2))
            client.subscribe(to: "prices").subscribe(recorder)
            for index in 1...5 { try await client.send(.int(Int64(index)), to: "prices") }
            // The catalog is answered after every `next` the sends caused.
            let catalog = try await client.list()
            #expect(subscribers(of: "prices", in: catalog) == 1)
            #expect(try await recorder.events.next(2) == [.value(1), .value(2)])
            #expect(recorder.events.drain().isEmpty)
            recorder.request(.max(3))
            #expect(try await recorder.events.next(3) == [.value(3), .value(4), .value(5)])
            _ = try await client.list()
            #expect(recorder.events.drain().isEmpty)
        }
    }

    @Test func demandReturnedFromReceiveBecomesRequests() async throws {
        try await withServiceAndClient { _, _, client in
            let events = EventQueue<Value>()
            let cancellable = client.subscribe(pipeline: "sequence([1, 2, 3, 4, 5])")
                .sink(receiveCompletion: { _ in events.push("done") }, receiveValue: { events.push($0) })
            let got: [Value] = try await events.next(6)
            #expect(got == [1, 2, 3, 4, 5, "done"])
            cancellable.cancel()
        }
    }

    @Test func batchIsTheDefaultAndItsValuesAreUnpackedInOrder() async throws {
        #expect(HubClient.Configuration().batch)
        let text = try await nextsOnTheWire(configuration: testConfiguration(), options: SubscribeOptions())
        #expect(text.contains(#""values":["#))
        #expect(!text.contains(#""value":"#))
    }

    @Test(arguments: [false, true])
    func batchFalseKeepsThePlainForm(forTheConnection: Bool) async throws {
        var configuration = testConfiguration()
        if forTheConnection { configuration.batch = false }
        let options = SubscribeOptions(batch: forTheConnection ? nil : false)
        let text = try await nextsOnTheWire(configuration: configuration, options: options)
        #expect(!text.contains(#""values":"#))
        #expect(text.components(separatedBy: #""op":"next""#).count - 1 == 15)
    }

    /// Subscribes to a subject without demand, sends it 20 values (the server buffers them),
    /// asks for 15 at once and checks that exactly 1...15 arrive in order; returns what the
    /// server wrote to the client (its frames' text, through a recording relay).
    private func nextsOnTheWire(configuration: HubClient.Configuration, options: SubscribeOptions) async throws -> String {
        let (service, port) = try await startService()
        let relay = try TCPRelay(to: port, recordingFromServer: true)
        let client = try HubClient(url: "ws://127.0.0.1:\(relay.port)/", configuration: configuration)
        defer { relay.stop() }
        do {
            try await client.connect()
            let recorder = Recorder(demand: .none)
            client.subscribe(to: "bulk", options: options).subscribe(recorder)
            _ = try await client.list()  // answered after the subscribe took effect
            for index in 1...20 { try await client.send(.int(Int64(index)), to: "bulk") }
            recorder.request(.max(15))
            let got = try await recorder.events.next(15)
            #expect(got == (1...15).map { .value(.int(Int64($0))) })
            _ = try await client.list()
            #expect(recorder.events.drain().isEmpty)
            recorder.cancel()
        } catch {
            await client.close()
            await service.shutdown()
            throw error
        }
        await client.close()
        await service.shutdown()
        return String(decoding: relay.receivedFromServer, as: UTF8.self)
    }

    @Test func valuesAfterCloseFailWithClosed() async throws {
        let (service, port) = try await startService()
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        let values = client.values(of: "late")
        await client.close()
        await #expect {
            for try await _ in values {}
        } throws: { error in
            (error as? HubClientError)?.code == .closed
        }
        await service.shutdown()
    }

    @Test func cancelStopsDeliveryAndTheServerSubscription() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .unlimited)
            client.subscribe(to: "ticks").subscribe(recorder)
            try await client.send(1, to: "ticks")
            #expect(try await recorder.events.next() == .value(1))
            #expect(subscribers(of: "ticks", in: try await client.list()) == 1)
            recorder.cancel()
            try await client.send(2, to: "ticks")
            #expect(subscribers(of: "ticks", in: try await client.list()) == 0)
            #expect(recorder.events.drain().isEmpty)
        }
    }

    @Test func pipelineErrorFailsWithTheServersCodeAndData() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .max(1))
            client.subscribe(pipeline: "prices | map(").subscribe(recorder)
            let error = try #require(try await recorder.events.next().failure)
            #expect(error.code == HubClientError.Code(.pipelineError))
            #expect(error.serverError?.code == .pipelineError)
            #expect(error.data?["line"] == 1)
            #expect(error.data?["column"] != nil)
        }
    }

    @Test func invalidNamesAreBadMessages() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .max(1))
            client.subscribe(to: "9lives").subscribe(recorder)
            let error = try #require(try await recorder.events.next().failure)
            #expect(error.code == HubClientError.Code(.badMessage))
            await #expect {
                try await client.send(1, to: "bad name")
            } throws: { error in
                (error as? HubClientError)?.code == HubClientError.Code(.badMessage)
            }
        }
    }

    @Test func completedSubjectRefusesSendsAndCompletesSubscribers() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .unlimited)
            client.subscribe(to: "done").subscribe(recorder)
            try await client.send("last", to: "done")
            try await client.complete("done")
            #expect(try await recorder.events.next(2) == [.value("last"), .finished])
            await #expect {
                try await client.send(1, to: "done")
            } throws: { error in
                (error as? HubClientError)?.code == HubClientError.Code(.completed)
            }
            await #expect {
                try await client.complete("done")
            } throws: { error in
                (error as? HubClientError)?.code == HubClientError.Code(.completed)
            }
        }
    }

    @Test func failDeliversTheErrorValue() async throws {
        try await withServiceAndClient { _, _, client in
            let recorder = Recorder(demand: .unlimited)
            client.subscribe(to: "doomed").subscribe(recorder)
            _ = try await client.list()
            try await client.fail("doomed", error: ["reason": "gone"])
            let error = try #require(try await recorder.events.next().failure)
            #expect(error.code == HubClientError.Code(.failed))
            #expect(error.data == ["reason": "gone"])
        }
    }

    @Test func triggersAndTheCatalog() async throws {
        try await withServiceAndClient { _, _, client in
            try await client.trigger("refresh")  // creates the trigger
            let recorder = Recorder(demand: .unlimited)
            client.subscribe(to: "refresh").subscribe(recorder)
            _ = try await client.list()
            try await client.trigger("refresh", key: ["user": 7])
            try await client.trigger("refresh")
            #expect(try await recorder.events.next(2) == [.value(["user": 7]), .value(.null)])
            try await client.send(1, to: "alpha")
            let catalog = try await client.list()
            #expect(catalog.triggers == [.init(name: "refresh", subscribers: 1)])
            #expect(catalog.connections == 1)
            #expect(catalog.subjects.map(\.name) == ["alpha"])
            #expect(catalog.subjects.first?.kind == .passthrough)
            #expect(subscribers(of: "alpha", in: catalog) == 0)
        }
    }

    @Test func asyncSequenceIteratesWithPrefetch() async throws {
        try await withServiceAndClient { _, _, client in
            let numbers = (1...50).map(String.init).joined(separator: ", ")
            var received: [Value] = []
            for try await value in client.subscribe(pipeline: "sequence([\(numbers)])").values(prefetch: 4) {
                received.append(value)
            }
            #expect(received == (1...50).map { Value.int(Int64($0)) })
        }
    }

    @Test func asyncSequenceKeepsOnlyThePrefetchWindowInFlight() async throws {
        try await withServiceAndClient { _, _, client in
            // The server buffers 5 values beyond the demand, then fails with overflow:
            // with 4 requested, 10 sends overflow; had the client asked for more, they would not.
            let values = client.values(of: "window", prefetch: 4, options: SubscribeOptions(buffer: 5, overflow: .error))
            let release = EventQueue<Void>()
            let reader = Task { () async throws(HubClientError) -> [Value] in
                var iterator = values.makeAsyncIterator()
                var received: [Value] = []
                if let first = try await iterator.next() { received.append(first) }
                _ = try? await release.next(timeout: .seconds(20), "the release")
                do throws(HubClientError) {
                    while let value = try await iterator.next() { received.append(value) }
                } catch {
                    #expect(error.code == HubClientError.Code(.overflow))
                    return received
                }
                Issue.record("no overflow: the window let more than 4 values through")
                return received
            }
            try await waitForSubscribers(1, of: "window", client: client)
            for index in 1...10 { try await client.send(.int(Int64(index)), to: "window") }
            release.push(())
            let received = try await reader.value
            #expect(received.count <= 4)
            #expect(received.first == 1)
            #expect(received == (1...received.count).map { .int(Int64($0)) })
        }
    }

    @Test func theDefaultWindowHoldsWhatASlowConsumerHasNotTakenYet() async throws {
        try await withServiceAndClient { _, _, client in
            // 200 values for a subscription whose buffer on the server holds 10, while the
            // consumer takes none: the default window takes them off the server, no overflow.
            let values = client.values(of: "behind", options: SubscribeOptions(buffer: 10, overflow: .error))
            let release = EventQueue<Void>()
            let reader = Task { () async throws(HubClientError) -> [Value] in
                var iterator = values.makeAsyncIterator()
                var received: [Value] = []
                if let first = try await iterator.next() { received.append(first) }
                _ = try? await release.next(timeout: .seconds(20), "the release")
                while received.count < 200, let value = try await iterator.next() { received.append(value) }
                return received
            }
            try await waitForSubscribers(1, of: "behind", client: client)
            for index in 1...200 { try await client.send(.int(Int64(index)), to: "behind") }
            release.push(())
            let received = try await reader.value
            #expect(received == (1...200).map { .int(Int64($0)) })
        }
    }

    @Test func asyncSequenceThrowsTheServersError() async throws {
        try await withServiceAndClient { _, _, client in
            var received: [Value] = []
            await #expect {
                for try await value in client.subscribe(pipeline: "fail(\"boom\")").values() {
                    received.append(value)
                }
            } throws: { error in
                guard let error = error as? HubClientError else { return false }
                return error.code == HubClientError.Code(.failed) && error.data == "boom"
            }
            #expect(received.isEmpty)
        }
    }

    @Test func breakingOutOfTheLoopCancelsTheSubscription() async throws {
        try await withServiceAndClient { _, _, client in
            let reader = Task { () async throws -> [Value] in
                var received: [Value] = []
                for try await value in client.values(of: "feed", prefetch: 2) {
                    received.append(value)
                    if received.count == 2 { break }
                }
                return received
            }
            try await waitForSubscribers(1, of: "feed", client: client)
            for index in 1...3 { try await client.send(.int(Int64(index)), to: "feed") }
            #expect(try await reader.value == [1, 2])
            try await waitForSubscribers(0, of: "feed", client: client)
        }
    }

    @Test func taskCancellationEndsNextAndCancelsTheSubscription() async throws {
        try await withServiceAndClient { _, _, client in
            let waiting = Task { () async throws -> Value? in
                var iterator = client.values(of: "quiet").makeAsyncIterator()
                return try await iterator.next()
            }
            try await waitForSubscribers(1, of: "quiet", client: client)
            waiting.cancel()
            #expect(try await waiting.value == nil)
            try await waitForSubscribers(0, of: "quiet", client: client)
        }
    }

    @Test func refusedConnectionNamesHostAndPort() async throws {
        let (service, port) = try await startService()
        await service.shutdown()
        await #expect {
            _ = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        } throws: { error in
            guard let error = error as? HubClientError else { return false }
            return error.code == .connectionFailed && error.message.contains("127.0.0.1:\(port)")
        }
    }

    @Test func callsConnectOnDemandAndFailWhenRefused() async throws {
        let (service, port) = try await startService()
        await service.shutdown()
        let client = try HubClient(url: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        await #expect {
            try await client.send(1, to: "x")
        } throws: { error in
            (error as? HubClientError)?.code == .connectionFailed
        }
        let recorder = Recorder(demand: .max(1))
        client.subscribe(to: "x").subscribe(recorder)
        #expect(try await recorder.events.next().failure?.code == .connectionFailed)
        await client.close()
        await #expect {
            try await client.send(1, to: "x")
        } throws: { error in
            (error as? HubClientError)?.code == .closed
        }
    }

    @Test func largeValuesRoundTrip() async throws {
        try await withServiceAndClient { _, _, client in
            let big = Value.string(String(repeating: "0123456789abcdef", count: 40 * 1024))  // 640 KiB
            let recorder = Recorder(demand: .max(1))
            client.subscribe(to: "blobs").subscribe(recorder)
            try await client.send(["blob": big], to: "blobs")
            #expect(try await recorder.events.next() == .value(["blob": big]))
        }
    }

    @Test func shutdownWithLiveSubscribersFailsThemClearly() async throws {
        let (service, port) = try await startService()
        let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
        let recorder = Recorder(demand: .unlimited)
        client.subscribe(to: "live").subscribe(recorder)
        #expect(subscribers(of: "live", in: try await client.list()) == 1)
        await service.shutdown()
        let error = try #require(try await recorder.events.next().failure)
        // The server ends each live subscription with shutting_down before its close 1001.
        #expect(error.code == HubClientError.Code(.shuttingDown))
        #expect(error.serverError?.code == .shuttingDown)
        #expect(error.message.contains("shutting down"))
        await client.close()
    }

    @Test func reconnectsAfterAServerRestartOnTheSamePort() async throws {
        let (service, port) = try await startService()
        let policy = ReconnectPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200))
        let client = try await HubClient.connect(
            to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration(reconnect: policy))
        let recorder = Recorder(demand: .unlimited)
        client.subscribe(to: "news").subscribe(recorder)
        #expect(subscribers(of: "news", in: try await client.list()) == 1)
        await service.shutdown()
        #expect(try await recorder.events.next().failure?.code == HubClientError.Code(.shuttingDown))
        let (restarted, samePort) = try await startService(port: port)
        #expect(samePort == port)
        // The call waits for the reconnection.
        let catalog = try await client.list()
        #expect(catalog.subjects.isEmpty)
        #expect(await client.connectCount == 2)
        let again = Recorder(demand: .unlimited)
        client.subscribe(to: "news").subscribe(again)
        try await client.send("back", to: "news")
        #expect(try await again.events.next() == .value("back"))
        await client.close()
        await restarted.shutdown()
    }
}
