import HubEngine
import HubValue
import HubWire

extension PipelineBuilder {
    /// One expression evaluated per element: the evaluation is bounded by the
    /// per-evaluation step limit and by what the environment's ``ResourceBudget`` has
    /// left (it is charged for the steps taken), and a value the expression builds is
    /// bounded in depth and size (``PipelineLimits/maxValueDepth``,
    /// ``PipelineLimits/maxValueBytes``), so that nothing a pipeline makes can exhaust
    /// the stack, the memory or the loop.
    func evaluation(
        _ e: ExpressionSyntax, of stage: StageSyntax
    ) -> (_ current: Value, _ variables: [String: Value]) throws(HubError) -> Value {
        let now = environment.wallClock
        let budget = environment.budget
        let limits = self.limits
        let builds = Self.mayBuildContainers(e)
        let cache = EvaluationCache()
        return { current, variables throws(HubError) in
            let allowed = budget.map { Swift.min(ExpressionEvaluator.maximumSteps, $0.available()) }
                ?? ExpressionEvaluator.maximumSteps
            guard allowed > 0 else { throw budget!.workError(needing: 1, stage.text) }
            let evaluator = ExpressionEvaluator(
                current: current, variables: variables, now: now, maximumSteps: allowed, cache: cache)
            let result: Value
            do throws(ExpressionEvaluator.Failure) {
                result = try evaluator.evaluate(e)
            } catch {
                budget?.spend(allowed - evaluator.budget.remaining)
                if evaluator.budget.remaining < 0, allowed < ExpressionEvaluator.maximumSteps, let budget {
                    throw budget.workError(needing: allowed + 1, stage.text)
                }
                throw Self.failure(error, in: stage)
            }
            var used = allowed - evaluator.budget.remaining
            if builds {
                let measure = result.measure(maxDepth: limits.maxValueDepth, maxBytes: limits.maxValueBytes)
                used += measure.nodes / 8
                if measure.exceeded {
                    budget?.spend(used)
                    throw Self.tooLarge(measure, in: stage, limits: limits)
                }
            }
            budget?.spend(used)
            return result
        }
    }

    /// The `limit_exceeded` error of a value built past the limits in `stage`.
    static func tooLarge(_ measure: ValueMeasure, in stage: StageSyntax, limits: PipelineLimits) -> HubError {
        if measure.depth > limits.maxValueDepth {
            return HubError(
                .limitExceeded,
                "\(stage.text): the value built nests deeper than \(limits.maxValueDepth) levels",
                data: ["stage": .string(stage.text), "limit": "maxValueDepth", "value": .int(Int64(limits.maxValueDepth))])
        }
        return HubError(
            .limitExceeded,
            "\(stage.text): the value built is larger than \(limits.maxValueBytes) bytes",
            data: ["stage": .string(stage.text), "limit": "maxValueBytes", "value": .int(Int64(limits.maxValueBytes))])
    }

    /// Checks a value a stage assembled from others (`collect`, `zip`, …) against the
    /// value limits, charging the walk to the budget.
    static func checkBuilt(
        _ value: Value, in stage: StageSyntax, limits: PipelineLimits, budget: ResourceBudget?
    ) throws(HubError) {
        let measure = value.measure(maxDepth: limits.maxValueDepth, maxBytes: limits.maxValueBytes)
        budget?.spend(measure.nodes / 8)
        if measure.exceeded { throw tooLarge(measure, in: stage, limits: limits) }
    }

    /// Whether evaluating `e` may produce an array or an object that is not simply one of
    /// its inputs (a literal, a function that builds, `+` joining arrays): only such
    /// results are measured. Anything that merely selects (`.a.b`, `$acc`, a comparison)
    /// returns a value that was already bounded.
    static func mayBuildContainers(_ e: ExpressionSyntax) -> Bool {
        switch e.kind {
        case .current, .variable, .name, .literal, .lambda, .pipeline:
            return false
        case .array, .object, .call:
            return true
        case let .binary(op, l, r):
            return op == .add || mayBuildContainers(l) || mayBuildContainers(r)
        case let .field(base, _):
            return mayBuildContainers(base)
        case let .index(base, index):
            return mayBuildContainers(base) || mayBuildContainers(index)
        case let .negate(x), let .not(x):
            return mayBuildContainers(x)
        case let .conditional(c, a, b):
            return mayBuildContainers(c) || mayBuildContainers(a) || mayBuildContainers(b)
        }
    }
}
