#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's entry point for a program with its own `main` (LLVM ≥ 11).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The harness the driver calls (set once, before the driver starts).
nonisolated(unsafe) private var harness: (UnsafeRawBufferPointer) -> Void = { _ in }

/// libFuzzer's callback by its C name (its archive's own `main`, linked in with the
/// sanitizer, refers to it): one input to the harness.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    harness(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Runs libFuzzer with the process's arguments (`-max_total_time=30`, a corpus folder,
/// a crash file to replay…) on `body`, which must crash (trap) on a bug and return
/// otherwise. Never returns.
public func runFuzzer(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    harness = body
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) }
    exit(status)
}
