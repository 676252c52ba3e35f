/// Whether a WebSocket message is text (UTF-8) or binary.
public enum WebSocketMessageKind: Sendable, Hashable {
    /// A text message (opcode 1).
    case text
    /// A binary message (opcode 2).
    case binary
}
