/// The outcome of checking the fields of a `subscribe` whose `id` is valid.
///
/// An invalid subscribe is refused on its id: the session answers
/// `{"op":"error","id":N,...}` with the carried error and frees the id.
public enum SubscribeCheck: Hashable, Sendable {
    /// Every field is well-formed.
    case valid(SubscribeRequest)
    /// The refusal: `bad_message` for both or neither of `to`/`pipeline`, an
    /// ill-typed field, a bad name, `buffer` or `overflow`; `invalid_demand`
    /// for a bad initial `demand`.
    case invalid(HubError)
}
