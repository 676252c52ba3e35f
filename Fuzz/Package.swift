// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses for the parts that read what clients send (issue 12): the JSON
// reader, the wire decoder, the pipeline parser and compiler (and a short run of what
// compiles), the WebSocket frame handling and the HTTP/1.1 request parser. A package of its own, so that the
// broker's build is untouched: each harness only links with `-sanitize=fuzzer`, which
// scripts/fuzz passes (`scripts/fuzz --seconds 30`, or one harness: `scripts/fuzz
// FuzzJSON --seconds 600`). Crashes land in Fuzz/crashes/ and become regression
// inputs in Fuzz/regressions/HARNESS/, which scripts/fuzz replays before fuzzing.
let package = Package(
    name: "HubFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ReactiveHub", path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzJSON",
            dependencies: ["FuzzDriver", .product(name: "HubValue", package: "ReactiveHub")]),
        .executableTarget(
            name: "FuzzWire",
            dependencies: [
                "FuzzDriver", .product(name: "HubWire", package: "ReactiveHub"),
                .product(name: "HubValue", package: "ReactiveHub"),
            ]),
        .executableTarget(
            name: "FuzzPipeline",
            dependencies: [
                "FuzzDriver", .product(name: "HubRegistry", package: "ReactiveHub"),
                .product(name: "HubPipeline", package: "ReactiveHub"), .product(name: "HubEngine", package: "ReactiveHub"),
                .product(name: "HubTesting", package: "ReactiveHub"), .product(name: "HubValue", package: "ReactiveHub"),
                .product(name: "HubWire", package: "ReactiveHub"),
            ]),
        .executableTarget(
            name: "FuzzFrames",
            dependencies: ["FuzzDriver", .product(name: "HubTransport", package: "ReactiveHub")]),
        .executableTarget(
            name: "FuzzHTTP",
            dependencies: ["FuzzDriver", .product(name: "HubTransport", package: "ReactiveHub")]),
    ]
)
