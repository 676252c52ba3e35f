/// Byte buffers recycled across one loop's connections, so that queueing and writing do
/// not allocate in the steady state. Loop-confined (it lives in its ``EventLoop``).
///
/// Two kinds: queue-entry buffers (``take()`` / ``recycle(_:)``, bounded in count and in
/// the capacity kept) and one scratch buffer for assembling a write (``takeScratch()`` /
/// ``returnScratch(_:)``: a write is complete, or copied by lws, when `lws_write` returns,
/// so one scratch serves every connection of the loop).
struct BufferPool {
    /// The most spare buffers kept.
    let maximumSpareCount: Int
    /// Buffers with a larger capacity are freed instead of kept.
    let maximumSpareCapacity: Int
    /// A larger scratch buffer is freed instead of kept.
    let maximumScratchCapacity: Int

    private var spares: [[UInt8]] = []
    private var scratch: [UInt8] = []

    /// A pool; the defaults keep 256 buffers of up to 128 KiB and a 256 KiB scratch.
    init(maximumSpareCount: Int = 256, maximumSpareCapacity: Int = 128 << 10, maximumScratchCapacity: Int = 256 << 10) {
        self.maximumSpareCount = maximumSpareCount
        self.maximumSpareCapacity = maximumSpareCapacity
        self.maximumScratchCapacity = maximumScratchCapacity
    }

    /// The number of spare buffers held.
    var spareCount: Int { spares.count }

    /// An empty buffer, with the capacity of a recycled one when there is one.
    mutating func take() -> [UInt8] {
        spares.popLast() ?? []
    }

    /// Keeps `buffer` (emptied, capacity kept) for a later ``take()`` unless the pool is
    /// full or the buffer too large; `buffer` is left empty either way.
    mutating func recycle(_ buffer: inout [UInt8]) {
        var taken: [UInt8] = []
        swap(&taken, &buffer)
        guard spares.count < maximumSpareCount, taken.capacity <= maximumSpareCapacity else { return }
        taken.removeAll(keepingCapacity: true)
        spares.append(taken)
    }

    /// The scratch buffer, empty, for assembling one write.
    mutating func takeScratch() -> [UInt8] {
        var buffer: [UInt8] = []
        swap(&buffer, &scratch)
        buffer.removeAll(keepingCapacity: true)
        return buffer
    }

    /// Gives the scratch buffer back once its write returned (a too large one is freed).
    mutating func returnScratch(_ buffer: inout [UInt8]) {
        if buffer.capacity <= maximumScratchCapacity { swap(&buffer, &scratch) }
    }

    /// Frees every buffer held.
    mutating func removeAll() {
        spares = []
        scratch = []
    }
}
