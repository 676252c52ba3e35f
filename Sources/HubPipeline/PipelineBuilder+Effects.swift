import HubEngine
import HubValue
import HubWire

/// The stages that write into the hub: `into(name)`, the last stage of a pipeline that keeps
/// a subject up to date (a materialized view), and `handleEvents(into: name, ...)`, the
/// book's side-effect taps that publish what happens in a pipeline into a subject.
extension PipelineBuilder {
    /// `into(name)`: each value is published into the subject `name` (checked against its
    /// schema as a `send` is) and passed on. A refused value fails the pipeline, or is
    /// skipped when the environment skips failures.
    func makeInto(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        // A name written in the text is checked before anything runs; a computed one when it is built.
        if let word = Self.word(arguments[0]) { try authorize(.publish, word, at: arguments[0].position) }
        let name = try self.name(arguments[0], of: stage)
        let environment = self.environment
        let skip = environment.skipFailure
        let text = Self.abbreviated(stage.text)
        return { up, outer throws(HubError) in
            let target = try name(outer)
            let write = try environment.sink(named: target)
            let checked: (Value) throws(HubError) -> Value = { value throws(HubError) in
                do throws(HubError) {
                    try write(value)
                } catch {
                    throw HubError(error.code, "\(text): \(error.message)", data: error.data)
                }
                return value
            }
            if let skip {
                return up.compactMap { value in Self.skipping(skip) { () throws(HubError) in try checked(value) } }.eraseToAnyPublisher()
            }
            return up.tryMap { value in try checked(value) }.mapError { Self.hubError($0) }.eraseToAnyPublisher()
        }
    }

    /// The events `handleEvents` can tap, with what `.` is in their expression.
    static let tapLabels: Set<String> = ["receiveSubscription", "receiveOutput", "receiveCompletion", "receiveCancel", "receiveRequest"]

    /// `handleEvents(into: name, receiveSubscription: e, receiveOutput: e, receiveCompletion: e,
    /// receiveCancel: e, receiveRequest: e)`: passes everything through unchanged, and for each
    /// event given publishes the value of its expression into the subject `name`. `.` is the
    /// value for `receiveOutput`, `null` for a finish or the error (as in `catch`) for a failure
    /// in `receiveCompletion`, the demand (a number or `"unlimited"`) for `receiveRequest`,
    /// and `null` otherwise. A tap that fails is reported and ignored: it never changes the stream.
    func makeHandleEvents(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        var target: ((Value) throws(HubError) -> String)?
        var taps: [String: ElementFunction] = [:]
        for argument in arguments {
            guard let label = argument.label else {
                throw Self.error("handleEvents takes labelled arguments: into: and receiveOutput: ...", at: argument.position)
            }
            if label == "into" {
                if let word = Self.word(argument) { try authorize(.publish, word, at: argument.position) }
                target = try name(argument, of: stage)
            } else if Self.tapLabels.contains(label) {
                guard taps[label] == nil else { throw Self.error("handleEvents has '\(label)' twice", at: argument.position) }
                taps[label] = try element(argument, of: stage)
            } else {
                throw Self.error(
                    "handleEvents has no argument '\(label)' (it takes into: and \(Self.tapLabels.sorted().joined(separator: ", ")))",
                    at: argument.position)
            }
        }
        guard let target else { throw Self.error("handleEvents needs 'into:', the subject its events go to", at: stage.position) }
        guard !taps.isEmpty else { throw Self.error("handleEvents needs at least one event to tap, such as receiveOutput:", at: stage.position) }
        let environment = self.environment
        return { up, outer throws(HubError) in
            let write = try environment.sink(named: try target(outer))
            func tap(_ label: String, _ current: Value) {
                guard let f = taps[label] else { return }
                do throws(HubError) {
                    try write(try f(current, nil))
                } catch {
                    environment.ignoredFailure(error)
                }
            }
            return up.handleEvents(
                receiveSubscription: taps["receiveSubscription"] == nil ? nil : { _ in tap("receiveSubscription", .null) },
                receiveOutput: taps["receiveOutput"] == nil ? nil : { tap("receiveOutput", $0) },
                receiveCompletion: taps["receiveCompletion"] == nil ? nil : { completion in
                    switch completion {
                    case .finished: tap("receiveCompletion", .null)
                    case .failure(let error): tap("receiveCompletion", Self.errorValue(error))
                    }
                },
                receiveCancel: taps["receiveCancel"] == nil ? nil : { tap("receiveCancel", .null) },
                receiveRequest: taps["receiveRequest"] == nil ? nil : { demand in
                    tap("receiveRequest", demand.max.map { .int(Int64($0)) } ?? .string("unlimited"))
                }
            ).eraseToAnyPublisher()
        }
    }
}
