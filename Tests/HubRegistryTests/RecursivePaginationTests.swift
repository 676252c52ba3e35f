import HubRegistry
import HubEngine
import HubPipeline
import HubValue
import HubWire
import HubTesting
import Testing

/// Seed 000's paginated publisher, `itemsPublisher(at: page)`, which returns its page and,
/// when the results name a next page, itself for that page behind
/// `wait(untilOutputFrom: paginator)`: a named pipeline that calls itself with an argument,
/// for as many pages as the results say.
@Suite("Recursive pagination: named pipelines called with an argument")
struct RecursivePaginationTests {
    typealias Recorder = RecordingSubscriber<Value, HubError>

    /// `page`, with `.` the page number: the page's items and the next page number (null
    /// after the last); then, when there is a next page, that page once `more` fires.
    static let page = """
        combineLatest(just(.), pages | first())
          | map({n: .[0], items: .[1][.[0]], next: .[1][.[0] + 1] != null ? .[0] + 1 : null})
          | switchToLatest(.next != null
              ? (page(.next) | wait(trigger(more)) | retry() | prepend(.))
              : just(.))
        """

    private func hub(pages: Value, limits: PipelineLimits = PipelineLimits()) throws -> Hub {
        let hub = Hub(configuration: .init(autoCreate: false, limits: limits), scheduler: ImmediateScheduler.shared)
        try hub.declareSubject("pages", initialValue: pages)
        try hub.declareTrigger("more")
        try hub.declarePipeline("page", source: Self.page, shared: false)
        return hub
    }

    @Test func eachPageLoadsOnTheSignalForAsManyPagesAsTheResultsSay() throws {
        let hub = try hub(pages: [["a", "b"], ["c"], ["d", "e"], ["f"]])
        let recorder = Recorder(initialDemand: .unlimited)
        try hub.compile(pipeline: "page(0) | map(.items)").subscribe(recorder)
        #expect(recorder.values == [["a", "b"]])
        try hub.activate("more", key: nil)
        #expect(recorder.values == [["a", "b"], ["c"]])
        try hub.activate("more", key: nil)
        try hub.activate("more", key: nil)
        #expect(recorder.values == [["a", "b"], ["c"], ["d", "e"], ["f"]])
        #expect(recorder.events.last == .finished, "no next page: the last level is just(.)")
        try hub.activate("more", key: nil)
        #expect(recorder.values.count == 4)
    }

    @Test func aLongerResultMeansMorePagesNotAFixedNumber() throws {
        let count = 40
        let hub = try hub(pages: .array((0..<count).map { .array([.int(Int64($0))]) }))
        let recorder = Recorder(initialDemand: .unlimited)
        try hub.compile(pipeline: "page(0) | scan([], $acc + .items)").subscribe(recorder)
        for _ in 1..<count { try hub.activate("more", key: nil) }
        #expect(recorder.values.last == .array((0..<count).map { .int(Int64($0)) }))
        #expect(recorder.events.last == .finished)
    }

    @Test func theDepthIsBounded() throws {
        let hub = try hub(pages: [[1], [2], [3], [4]], limits: PipelineLimits(maxCallDepth: 2))
        let recorder = Recorder(initialDemand: .unlimited)
        try hub.compile(pipeline: "page(0) | map(.items)").subscribe(recorder)
        try hub.activate("more", key: nil)
        #expect(recorder.values == [[1], [2]])
        try hub.activate("more", key: nil)
        guard case .failure(let error)? = recorder.events.last else {
            Issue.record("expected the third page to fail: \(recorder.events)")
            return
        }
        #expect(error.code == .limitExceeded)
        #expect(error.message == "pipeline 'page' called 3 levels deep: the limit is 2 (limits.pipelines.maxCallDepth)")
    }

    @Test func aCallChecksItsArgumentAndItsName() throws {
        let hub = try hub(pages: [[1]])
        #expect(throws: HubError(.pipelineError, "1:1: page takes 1 argument, got 2", data: ["line": 1, "column": 1])) {
            try hub.compile(pipeline: "page(0, 1)")
        }
        #expect(throws: HubError.self) { try hub.compile(pipeline: "pag(0)") }
        // A subject or trigger called like a pipeline says what it is.
        #expect(throws: HubError(
            .pipelineError, "1:1: 'pages' is a subject: only a named pipeline takes an argument (write 'pages' bare)",
            data: ["line": 1, "column": 1])) { try hub.compile(pipeline: "pages(1)") }
        #expect(throws: HubError(
            .pipelineError, "1:7: 'more' is a trigger: only a named pipeline takes an argument (write 'more' bare)",
            data: ["line": 1, "column": 7])) { try hub.compile(pipeline: "merge(more(), pages)") }
    }
}
