import Foundation
import HubClient
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
import HubTesting
import Testing

/// examples/todo: inputs folded by a running `scan` reducer `into` the current-value subject `viewState`.
@Suite("Scenario: todo view state")
struct TodoScenarioTests {
    @Test func theViewStateFollowsTheInputsAndALateSubscriberGetsItAtOnce() async throws {
        try await Scenario.with("todo") { scenario in
            let view = scenario.subscribe("viewState")
            // The initial state arrives at once, before any input.
            #expect(try await view.next("the initial state") == json(#"{"state": "loading", "todos": []}"#))

            // Added while loading: ignored (the state is re-emitted unchanged).
            try await scenario.client.send(["type": "todoAdded", "title": "too early"], to: "input")
            #expect(try await view.next() == json(#"{"state": "loading", "todos": []}"#))

            try await scenario.client.send(["type": "stateRequested"], to: "input")
            #expect(try await view.next() == json(#"{"state": "content", "todos": []}"#))
            try await scenario.client.send(["type": "todoAdded", "title": "Buy milk"], to: "input")
            #expect(try await view.next() == json(#"{"state": "content", "todos": [{"id": "1", "title": "Buy milk"}]}"#))
            try await scenario.client.send(["type": "todoAdded", "title": "Walk the dog"], to: "input")
            #expect(try await view.next() == json(#"""
                {"state": "content", "todos": [{"id": "1", "title": "Buy milk"}, {"id": "2", "title": "Walk the dog"}]}
                """#))
            try await scenario.client.send(["type": "todoRemoved", "id": "1"], to: "input")
            let afterRemoval = try json(#"{"state": "content", "todos": [{"id": "2", "title": "Walk the dog"}]}"#)
            #expect(try await view.next() == afterRemoval)

            // Another screen, on its own connection, gets the current state at once.
            let other = try await scenario.connectAnother()
            let late = scenario.subscribe("viewState", client: other)
            #expect(try await late.next("the current state") == afterRemoval)

            // Both follow the next input; ids go on from the reducer's state.
            try await other.send(["type": "todoAdded", "title": "Call mum"], to: "input")
            let latest = try json(#"""
                {"state": "content", "todos": [{"id": "2", "title": "Walk the dog"}, {"id": "3", "title": "Call mum"}]}
                """#)
            #expect(try await late.next() == latest)
            #expect(try await view.next() == latest)
        }
    }

    /// The state once lived in the shared pipeline's subscription, so the next subscriber
    /// after the last had left started from "loading" again. It now lives in the subject.
    @Test func theStateOutlivesItsSubscribers() async throws {
        try await Scenario.with("todo") { scenario in
            let view = scenario.subscribe("viewState")
            #expect(try await view.next() == json(#"{"state": "loading", "todos": []}"#))
            try await scenario.client.send(["type": "stateRequested"], to: "input")
            #expect(try await view.next() == json(#"{"state": "content", "todos": []}"#))
            try await scenario.client.send(["type": "todoAdded", "title": "Buy milk"], to: "input")
            let state = try json(#"{"state": "content", "todos": [{"id": "1", "title": "Buy milk"}]}"#)
            #expect(try await view.next() == state)
            view.cancel()
            let other = try await scenario.connectAnother()
            let again = scenario.subscribe("viewState", client: other)
            #expect(try await again.next() == state)
        }
    }

    /// `hubcli send input 5` was once acknowledged, then failed the shared reducer for
    /// every subscriber and lost the list, logging nothing. Now the real `hubcli`, over a real
    /// socket, is refused at the door with the offending place; the list survives and the
    /// refusal is logged with the sender's session.
    @Test func aBadValueIsRefusedAtTheDoorAndTheListSurvives() async throws {
        let log = LogRecorder()
        try await Scenario.with("todo", log: log) { scenario in
            let view = scenario.subscribe("viewState")
            #expect(try await view.next() == json(#"{"state": "loading", "todos": []}"#))
            try await scenario.client.send(["type": "stateRequested"], to: "input")
            _ = try await view.next()
            try await scenario.client.send(["type": "todoAdded", "title": "Buy milk"], to: "input")
            let state = try json(#"{"state": "content", "todos": [{"id": "1", "title": "Buy milk"}]}"#)
            #expect(try await view.next() == state)

            let refused = try await HubCLIExecutable.run(["send", "input", "5", "--url", "ws://127.0.0.1:\(scenario.port)/"])
            #expect(refused.status != 0)
            #expect(refused.errors.contains("invalid_value"), "\(refused.errors)")
            #expect(refused.errors.contains("subject 'input' refuses the value: .: expected object, got integer"), "\(refused.errors)")
            do {
                try await scenario.client.send(["type": "todoAdded", "title": 7], to: "input")
                Issue.record("a title that is not a string was accepted")
            } catch let error as HubClientError {
                #expect(error.code == HubClientError.Code(.invalidValue))
                #expect(error.message == "subject 'input' refuses the value: .title: expected string, got integer")
            }

            // The list survives: the next input builds on it, nothing was lost in between.
            try await scenario.client.send(["type": "todoAdded", "title": "Walk the dog"], to: "input")
            #expect(try await view.next() == json(#"""
                {"state": "content", "todos": [{"id": "1", "title": "Buy milk"}, {"id": "2", "title": "Walk the dog"}]}
                """#))
            let refusals = log.entries.filter { $0.message == "value refused by the subject's schema" }
            #expect(refusals.count == 2)
            #expect(refusals.first?.metadata["subject"] == "input")
            #expect(refusals.first?.metadata["path"] == ".")
            #expect(refusals.first?.metadata["sender"]?.hasPrefix("session ") == true)
        }
    }

}
