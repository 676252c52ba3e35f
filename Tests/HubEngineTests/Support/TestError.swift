import HubEngine

/// The error the tests send and expect.
enum TestError: Error, Equatable, Hashable, CustomStringConvertible {
    case oops
    case other(Int)

    var description: String {
        switch self {
        case .oops: return "oops"
        case .other(let n): return "other(\(n))"
        }
    }

    /// How a test records an untyped error (a try-variant's `any Error`): the `TestError`
    /// itself, or `.other(-1)` for an error of another type.
    static func recorded(_ error: any Error) -> TestError { (error as? TestError) ?? .other(-1) }
}
