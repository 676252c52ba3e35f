import HubEngine
import HubValue
import HubWire

extension PipelineBuilder {
    /// The first stage of a pipeline.
    func source(_ stage: StageSyntax) throws(HubError) -> Build {
        try countStage(stage)
        guard let _ = stage.arguments else {
            // A bare name: a subject, a named pipeline or a trigger.
            let environment = self.environment
            let name = stage.name
            try authorize(.subscribe, name, at: stage.position)
            return { _ throws(HubError) in try environment.source(named: name) }
        }
        let path = statePath
        switch stage.name {
        case "just":
            try noLabels(stage)
            let value = try constant(try arguments(stage, 1...1)[0], of: stage)
            return { outer throws(HubError) in
                self.resumable(Just(try value(outer)).setFailureType(to: HubError.self).eraseToAnyPublisher(), path)
            }
        case "sequence":
            try noLabels(stage)
            let argument = try arguments(stage, 1...1)[0]
            let value = try constant(argument, of: stage)
            return { outer throws(HubError) in
                let list = try value(outer)
                guard case let .array(elements) = list else {
                    throw Self.error("sequence needs an array, got \(ExpressionEvaluator.typeName(list))", at: argument.position)
                }
                return self.resumable(try self.sequencePublisher(elements, stage), path)
            }
        case "empty":
            _ = try arguments(stage, 0...0)
            return { _ throws(HubError) in Empty<Value, HubError>().eraseToAnyPublisher() }
        case "fail":
            try noLabels(stage)
            let value = try constant(try arguments(stage, 1...1)[0], of: stage)
            return { outer throws(HubError) in
                Fail<Value, HubError>(error: HubError.failed(try value(outer))).eraseToAnyPublisher()
            }
        case "timer":
            try noLabels(stage)
            let every = try duration(try arguments(stage, 1...1)[0], of: stage)
            let scheduler = environment.scheduler
            return { _ throws(HubError) in
                self.countedTimer(Self.timer(every: every, scheduler, ticks: self.slot(path), numbers: self.slot(path, suffix: "#n")), stage)
            }
        case "trigger":
            try noLabels(stage)
            let arguments = try arguments(stage, 1...2)
            let name = try self.name(arguments[0], of: stage)
            if let word = Self.word(arguments[0]) { try authorize(.subscribe, word, at: arguments[0].position) }
            let key = arguments.count > 1 ? try constant(arguments[1], of: stage) : nil
            let environment = self.environment
            return { outer throws(HubError) in
                try environment.trigger(named: try name(outer), key: try key?(outer))
            }
        case "subject":
            try noLabels(stage)
            let argument = try arguments(stage, 1...1)[0]
            let name = try self.name(argument, of: stage)
            if let word = Self.word(argument) { try authorize(.subscribe, word, at: argument.position) }
            let environment = self.environment
            return { outer throws(HubError) in try environment.source(named: try name(outer)) }
        case "merge", "combineLatest", "zip", "accumulateLatest":
            let builds = try pipelines(stage, atLeast: 1)
            let name = stage.name
            return { outer throws(HubError) in self.combined(name, try Self.buildAll(builds, outer), stage, path: path) }
        case "reduceLatest":
            let builds = try pipelines(stage, atLeast: 2)
            return { outer throws(HubError) in self.combined("reduceLatest", try Self.buildAll(builds, outer), stage, path: path) }
        case "publish", "publishAndRepeat":
            _ = try arguments(stage, 2...2)
            let builds = try pipelines(stage, atLeast: 2)
            let repeating = stage.name == "publishAndRepeat"
            return { outer throws(HubError) in
                let signal = Self.signal(try builds[0](outer))
                let inner = try builds[1](outer)
                if repeating {
                    return Publishers.publishAndRepeat(onOutputFrom: signal) { inner }.eraseToAnyPublisher()
                }
                return Publishers.publish(onOutputFrom: signal) { inner }.eraseToAnyPublisher()
            }
        default:
            if environment.isPipeline(named: stage.name) { return try call(stage) }
            if let kind = environment.kind(ofName: stage.name) {
                throw Self.error(
                    "'\(stage.name)' is a \(kind): only a named pipeline takes an argument (write '\(stage.name)' bare)",
                    at: stage.position)
            }
            if Self.operatorNames.contains(stage.name) {
                throw Self.error("'\(stage.name)' is an operator: a pipeline starts with a source", at: stage.position)
            }
            throw Self.error("unknown source '\(stage.name)'\(Self.didYouMean(stage.name, among: Self.sources))", at: stage.position)
        }
    }

    /// `name(argument)`: the named pipeline `name` called with `.` bound to `argument` (seed
    /// 000's `itemsPublisher(at: page)`, which calls itself for the next page).
    private func call(_ stage: StageSyntax) throws(HubError) -> Build {
        try noLabels(stage)
        let argument = try arguments(stage, 1...1)[0]
        try authorize(.subscribe, stage.name, at: stage.position)
        let value = try constant(argument, of: stage)
        let environment = self.environment
        let name = stage.name
        // The argument is evaluated now; the called pipeline is compiled when subscribed, so a
        // page behind `wait` costs nothing until its signal, and each resubscription (`retry`)
        // gets a new instance.
        return { outer throws(HubError) in
            let argument = try value(outer)
            return Deferred { () -> Pub in
                do throws(HubError) {
                    return try environment.call(pipeline: name, with: argument)
                } catch {
                    return Fail(error: error).eraseToAnyPublisher()
                }
            }.eraseToAnyPublisher()
        }
    }

    /// A signal for the seed operators: each value is an activation; a failure ends the signal.
    static func signal(_ publisher: Pub) -> AnyPublisher<Void, Never> {
        publisher.map { _ in () }.catch { _ in Empty<Void, Never>() }.eraseToAnyPublisher()
    }

    /// `timer(every)`: the tick number n at (n+1)·every after subscription; ticks without demand are skipped.
    /// Checkpointed (`ticks` for the time to the next tick, `numbers` for the last number),
    /// a restored timer goes on with the next number when its time is up.
    static func timer<S: Scheduler>(
        every: Duration, _ scheduler: S, ticks: OperatorStateSlot? = nil, numbers: OperatorStateSlot? = nil
    ) -> Pub {
        let step = max(every.nanosecondsClamped, 1)
        return Deferred {
            // The number comes from the time the tick ran, rounded; a loop that runs one tick
            // late and the next on time would give both the same number, so each number is
            // at least one more than the last (ticks skipped for want of demand still skip).
            let counter = StateBox((start: scheduler.now, last: Int64(-1)))
            if let numbers {
                let state = OperatorState(slot: numbers, codec: StateCodec<Void>.void)
                var restored: Int64?
                state.restore("timerNumber") { snapshot throws(CheckpointError) in restored = try snapshot.field("last").intValue }
                state.attach("timerNumber") { [weak counter] in counter.map { ["last": .int($0.value.last)] } }
                if let restored {
                    // Numbered as if it had run since its first tick: the next tick is number last + 1.
                    counter.value.last = restored
                    counter.value.start = SchedulerTime(nanoseconds: scheduler.now.nanoseconds &- (restored &+ 1) &* step)
                }
            }
            return Publishers.Timer(every: every, scheduler: scheduler, state: ticks).map { time -> Value in
                let elapsed = time.nanoseconds &- counter.value.start.nanoseconds
                counter.value.last = Swift.max(counter.value.last &+ 1, (elapsed &+ step / 2) / step - 1)
                return .int(counter.value.last)
            }
        }
        .setFailureType(to: HubError.self)
        .eraseToAnyPublisher()
    }

    /// The combining stages, as sources (`merge(p, q)`) and as operators (`p | merge(q)`), of
    /// the publishers `p` in order.
    ///
    /// `combineLatest` and `accumulateLatest` are the seed's `AccumulateLatestMany`: the
    /// inputs are read with unlimited demand and only their latest values kept, so a hot
    /// input's buffer never hands over stale values (PIPELINES.md §5); `reduceLatest` is
    /// `ReduceLatestMany` (the seed's `ReduceLatest3` for any count).
    static func combining(_ name: String, _ p: [Pub], state: OperatorState<Value>? = nil) -> Pub {
        switch name {
        case "merge":
            return Publishers.MergeMany(p).eraseToAnyPublisher()
        case "zip":
            // Checkpointed: one zip of every input, whose queues are saved.
            if let state { return Publishers.ZipMany(p, state: state).map { Value.array($0) }.eraseToAnyPublisher() }
            return zip(p)
        case "reduceLatest":
            return Publishers.ReduceLatestMany(p, state: state).map { Value.array($0.map { $0 ?? .null }) }.eraseToAnyPublisher()
        default:
            return Publishers.AccumulateLatestMany(p, state: state).map { Value.array($0) }.eraseToAnyPublisher()
        }
    }

    /// Arrays of the n-th values of every publisher.
    static func zip(_ p: [Pub]) -> Pub {
        switch p.count {
        case 1:
            return p[0].map { Value.array([$0]) }.eraseToAnyPublisher()
        case 2:
            return p[0].zip(p[1]).map { Value.array([$0.0, $0.1]) }.eraseToAnyPublisher()
        case 3:
            return p[0].zip(p[1], p[2]).map { Value.array([$0.0, $0.1, $0.2]) }.eraseToAnyPublisher()
        default:
            var result = p[0].zip(p[1], p[2], p[3]).map { Value.array([$0.0, $0.1, $0.2, $0.3]) }.eraseToAnyPublisher()
            for next in p.dropFirst(4) {
                result = result.zip(next).map { Value.array(($0.0.arrayValue ?? []) + [$0.1]) }.eraseToAnyPublisher()
            }
            return result
        }
    }
}
