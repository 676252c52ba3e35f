#if canImport(Glibc)
import Glibc

/// The pages of the running executable's read-only segments (its code, constants,
/// unwind tables and symbol tables) that starting the process touched, let go once
/// it has started.
///
/// A broker's start runs code it never runs again: argument parsing, the YAML
/// configuration, opening stores, the unwinding of the main thread that an async
/// `main` ends with (`dispatch_main` calls `pthread_exit`, which walks the unwind
/// tables). The kernel maps every page it faults in with the 64 KiB around it, and
/// those pages stay in the process's resident set (and in its private memory, when
/// no other process maps the binary) for as long as it runs. `release()` asks the
/// kernel to unmap them (`MADV_DONTNEED`): the pages stay in the page cache, and the
/// ones the broker still runs are mapped again on their next use, so what stays
/// resident is the working set of serving.
///
/// Only segments the program never writes are advised: a loadable segment without
/// the write flag, of an executable without text relocations. There, dropping a page
/// loses nothing, since a page mapped again is read from the file as it was.
/// (A debugger's breakpoint written into a page before the call would be dropped
/// with it: `hubcli serve` calls it right after it starts listening.)
public enum StartupPages {
    /// The address ranges, whole pages, of the running executable's loadable segments
    /// that it never writes; empty when they cannot be found for certain (no program
    /// header of the program headers, or text relocations).
    public static func readOnlySegments() -> [Range<UInt>] {
        guard let (headers, count) = programHeaders() else { return [] }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let all = UnsafeBufferPointer(start: headers, count: count)
        // The load bias: where the program headers are, less where the file says.
        guard let ownEntry = all.first(where: { $0.p_type == UInt32(PT_PHDR) }) else { return [] }
        let bias = UInt(bitPattern: headers) &- UInt(ownEntry.p_vaddr)
        if let dynamic = all.first(where: { $0.p_type == UInt32(PT_DYNAMIC) }),
            hasTextRelocations(UnsafePointer(bitPattern: bias &+ UInt(dynamic.p_vaddr))) {
            return []
        }
        let relro = all.filter { $0.p_type == UInt32(PT_GNU_RELRO) }.map { segment in
            (bias &+ UInt(segment.p_vaddr))..<(bias &+ UInt(segment.p_vaddr) &+ UInt(segment.p_memsz))
        }
        var ranges: [Range<UInt>] = []
        for segment in all where segment.p_type == UInt32(PT_LOAD) && segment.p_flags & UInt32(PF_W) == 0 {
            let start = bias &+ UInt(segment.p_vaddr)
            // Whole pages inside the part the file backs: a page shared with a neighbour is left.
            let first = (start + page - 1) / page * page
            let end = (start + UInt(segment.p_filesz)) / page * page
            guard first < end else { continue }
            let range = first..<end
            guard !relro.contains(where: { $0.overlaps(range) }) else { continue }
            ranges.append(range)
        }
        return ranges
    }

    /// Unmaps the resident pages of `readOnlySegments()` from this process; returns the
    /// bytes of the ranges advised (0 when there are none, or the kernel refused).
    @discardableResult
    public static func release() -> Int {
        var advised = 0
        for range in readOnlySegments() {
            guard let start = UnsafeMutableRawPointer(bitPattern: range.lowerBound) else { continue }
            if madvise(start, Int(range.count), MADV_DONTNEED) == 0 {
                advised += Int(range.count)
            }
        }
        return advised
    }

    /// The program headers of the executable, from the auxiliary vector the kernel
    /// gave the process (`AT_PHDR`, `AT_PHNUM`).
    private static func programHeaders() -> (UnsafePointer<Elf64_Phdr>, Int)? {
        let descriptor = open("/proc/self/auxv", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let read = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { break }
            bytes += chunk[0..<read]
        }
        var address: UInt64 = 0
        var count: UInt64 = 0
        bytes.withUnsafeBytes { raw in
            let entries = raw.count / 16
            for index in 0..<entries {
                let type = raw.loadUnaligned(fromByteOffset: index * 16, as: UInt64.self)
                let value = raw.loadUnaligned(fromByteOffset: index * 16 + 8, as: UInt64.self)
                if type == UInt64(AT_PHDR) { address = value }
                if type == UInt64(AT_PHNUM) { count = value }
            }
        }
        guard count > 0, let headers = UnsafePointer<Elf64_Phdr>(bitPattern: UInt(address)) else { return nil }
        return (headers, Int(count))
    }

    /// Whether the dynamic section says the loader writes into read-only segments.
    private static func hasTextRelocations(_ dynamic: UnsafePointer<Elf64_Dyn>?) -> Bool {
        guard var entry = dynamic else { return true }
        while entry.pointee.d_tag != Int64(DT_NULL) {
            if entry.pointee.d_tag == Int64(DT_TEXTREL) { return true }
            if entry.pointee.d_tag == Int64(DT_FLAGS), entry.pointee.d_un.d_val & UInt64(DF_TEXTREL) != 0 { return true }
            entry += 1
        }
        return false
    }
}
#endif
