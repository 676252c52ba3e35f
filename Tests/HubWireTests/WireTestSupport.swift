import HubWire
import Testing

/// Decodes `text` and returns the `WireError` it throws, or `nil` when it decodes.
func wireDecodeError(_ text: String) -> WireError? {
    do {
        _ = try ClientMessage.decode(text)
        return nil
    } catch {
        return error
    }
}

/// Decodes a server message and returns the `WireError` it throws, or `nil`.
func serverDecodeError(_ text: String) -> WireError? {
    do {
        _ = try ServerMessage.decode(text)
        return nil
    } catch {
        return error
    }
}

/// What the protocol layer alone answers to a client message: the `op` of the
/// answer and its `code`, `id` and `ack` (as the conformance vectors see them),
/// or `nil` when the answer (if any) depends on the hub's state.
struct WireOutcome: Equatable, CustomStringConvertible {
    var op: String
    var code: String?
    var id: UInt64?
    var ack: Int64?

    var description: String { "\(op) code=\(code ?? "-") id=\(id.map(String.init) ?? "-") ack=\(ack.map(String.init) ?? "-")" }

    static func of(_ text: String) -> WireOutcome? {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(text)
        } catch {
            return WireOutcome(op: "error", code: error.error.code.rawValue, id: nil, ack: error.ack)
        }
        switch message {
        case let .subscribe(id, .invalid(error)), let .request(id, .invalid(error)):
            return WireOutcome(op: "error", code: error.code.rawValue, id: id, ack: nil)
        case let .subscribe(id, .valid):
            return WireOutcome(op: "subscribed", code: nil, id: id, ack: nil)
        case let .send(_, _, ack?), let .complete(_, ack?), let .fail(_, _, ack?), let .trigger(_, _, ack?):
            return WireOutcome(op: "ack", code: nil, id: nil, ack: ack)
        case let .list(ack, _, _):
            return WireOutcome(op: "catalog", code: nil, id: nil, ack: ack)
        default:
            return nil
        }
    }
}
