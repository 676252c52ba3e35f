import Testing
import HubEngine
import HubTesting
import HubValue

/// The engine carries `Value` exactly as it carries typed outputs.
@Suite("The engine over Value")
struct ValueEngineTests {
    @Test func subjectOperatorsAndDemandOverValues() {
        let orders = PassthroughSubject<Value, TestError>()
        let totals = orders
            .filter { ($0["qty"]?.intValue ?? 0) > 100 }
            .map { order -> Value in
                .double(Double(order["qty"]!.intValue!) * order["price"]!.doubleValue!)
            }
            .scan(Value.double(0)) { .double($0.doubleValue! + $1.doubleValue!) }
        let recorder = RecordingSubscriber<Value, TestError>(initialDemand: .max(1))
        totals.subscribe(recorder)
        orders.send(["qty": 150, "price": 2.0])
        orders.send(["qty": 10, "price": 1.0])
        // No demand: the subject drops this one (Combine's PassthroughSubject).
        orders.send(["qty": 200, "price": 0.5])
        recorder.request(.max(1))
        orders.send(["qty": 300, "price": 1.0])
        orders.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(300.0), .value(600.0), .finished])
    }

    @Test func combiningAndReducingValues() {
        let a = PassthroughSubject<Value, Never>()
        let b = PassthroughSubject<Value, Never>()
        let recorder = RecordingSubscriber<Value, Never>(initialDemand: .unlimited)
        a.combineLatest(b).map { Value.array([$0, $1]) }.removeDuplicates().subscribe(recorder)
        a.send("x")
        b.send(1)
        b.send(1)
        a.send(["nested": [true, nil]])
        #expect(recorder.values == [["x", 1], ["x", 1], [["nested": [true, nil]], 1]].dropDuplicatesInOrder())
    }

    @Test func coldValueSequenceProducesOnlyWhatIsDemanded() {
        var produced = 0
        let source = (1...100).lazy.map { n -> Value in
            produced += 1
            return .int(Int64(n))
        }
        let recorder = RecordingSubscriber<Value, Never>(initialDemand: .max(3))
        source.publisher.compactMap { $0.intValue.map { Value.int($0 * 2) } }.subscribe(recorder)
        #expect(recorder.values == [2, 4, 6])
        #expect(produced <= 4)
        recorder.cancel()
    }
}

extension Array where Element: Equatable {
    /// The array without consecutive repeats.
    fileprivate func dropDuplicatesInOrder() -> [Element] {
        var result: [Element] = []
        for element in self where result.last != element { result.append(element) }
        return result
    }
}
