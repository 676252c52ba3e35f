/// A place in a connection loop's hand-off (``LoopHandOff``) for what one connection's
/// producer on the hub's loop queues until that loop writes: taken when the first piece
/// is queued, given up when the pieces are taken (at the hub loop's write, or before a
/// change that must follow them: a close, the end of a stream), so that the next piece
/// takes a new place after that change. Used through ``HandOffPlaceHolder``.
struct HandOffPlace {
    /// Which place is current; a gatherer holding an older one finds nothing to take.
    private(set) var generation = 0
    /// Whether the current place is taken.
    private var gathering = false

    /// Takes the current place when it is free: its generation, for the gatherer to claim.
    mutating func take() -> Int? {
        guard !gathering else { return nil }
        gathering = true
        return generation
    }

    /// Whether `generation` is still the current place; if so, gives it up.
    mutating func claim(_ generation: Int) -> Bool {
        guard generation == self.generation else { return false }
        self.generation += 1
        gathering = false
        return true
    }
}
