import HubClient
import Testing

/// examples/todo: inputs folded by a `scan` into a current-value `viewState`.
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

    @Test func theStateStartsAgainOnceEverySubscriberHasLeft() async throws {
        try await Scenario.with("todo") { scenario in
            let view = scenario.subscribe("viewState")
            #expect(try await view.next() == json(#"{"state": "loading", "todos": []}"#))
            try await scenario.client.send(["type": "stateRequested"], to: "input")
            #expect(try await view.next() == json(#"{"state": "content", "todos": []}"#))
            view.cancel()
            try await scenario.waitForPipelineSubscribers(0, of: "viewState")
            let again = scenario.subscribe("viewState")
            #expect(try await again.next() == json(#"{"state": "loading", "todos": []}"#))
        }
    }
}
