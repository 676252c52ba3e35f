import HubEngine
import HubRegistry
import HubTesting
import HubValue
import HubWire
import Testing

/// Keyed state and windows in running pipelines that checkpoint: crashed at several
/// moments (values consumed and not yet committed among them) and started again, they
/// write exactly what an uninterrupted run writes, each value once.
@Suite("Checkpointed keyed pipelines")
struct KeyedCheckpointTests {
    typealias Fixture = CheckpointedPipelineTests.Fixture

    /// `count` inputs over three keys, with event times 4 ms apart.
    private static func inputs(_ count: Int) -> [Value] {
        var random = SeededGenerator(seed: 2911)
        return (0..<count).map { index in
            ["k": .string(["a", "b", "c"][Int.random(in: 0...2, using: &random)]),
             "v": .int(Int64.random(in: 1...9, using: &random)), "ts": .int(Int64(index * 4))]
        }
    }

    /// What the view receives when `source` runs over `inputs`, the pipeline crashing
    /// (nothing pending committed) right after each input whose index is in `crashes`.
    private static func run(_ source: String, _ inputs: [Value], crashes: Set<Int>) throws -> [Value] {
        let fixture = try Fixture()
        try fixture.start(source)
        let viewer = try fixture.viewer()
        for (index, input) in inputs.enumerated() {
            try fixture.send(input)
            if crashes.contains(index) {
                fixture.crash()
                fixture.scheduler.advance()
                try fixture.start(source)
            }
            fixture.scheduler.advance()
        }
        #expect(fixture.log.entries("running pipeline resumes from its checkpoint").count == crashes.count)
        return viewer.values
    }

    @Test(arguments: [
        "input | groupBy(.k, scan(0, $acc + .v) | removeDuplicates()) | into(view)",
        "input | groupBy(.k, reduce(0, $acc + .v), maxKeys: 2) | into(view)",
        "input | tumbling(20ms, {n: count(), total: sum(.v)}, key: .k, time: .ts, lateness: 4ms) | into(view)",
        "input | session(10ms, collect(.v), key: .k, time: .ts) | into(view)",
    ])
    func aCrashedKeyedPipelineWritesWhatAnUninterruptedRunWrites(source: String) throws {
        let inputs = Self.inputs(40)
        let expected = try Self.run(source, inputs, crashes: [])
        #expect(expected.count > 3, "the pipeline writes something: \(expected)")
        let crashed = try Self.run(source, inputs, crashes: [3, 11, 12, 27, 38])
        #expect(crashed == expected)
    }
}
