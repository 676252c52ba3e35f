/// The largest ack the client uses before wrapping around to 1 (2^53−1).
enum WireFieldsLimit {
    static let maxAck: Int64 = (1 << 53) - 1
}
